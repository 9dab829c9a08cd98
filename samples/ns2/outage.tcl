# outage.tcl -- one Reno flow over a 5 Mb/s, 20 ms link that drops everything from 2 s to 6 s: the
# retransmission timer fires several times in a row (backed off), and the agent traces cwnd_ and
# ssthresh_, so the cwnd estimate's ssthresh after each expiry can be checked against ns-2's own.
# Usage (inside the output directory): ns outage.tcl
set ns [new Simulator]
set tf [open out.tr w]
$ns trace-all $tf
set cf [open cwnd.tr w]
set n0 [$ns node]
set n1 [$ns node]
$ns duplex-link $n0 $n1 5Mb 20ms DropTail
$ns queue-limit $n0 $n1 50
set tcp [new Agent/TCP/Reno]
$tcp set window_ 60
$tcp set packetSize_ 1000
$ns attach-agent $n0 $tcp
set sink [new Agent/TCPSink]
$ns attach-agent $n1 $sink
$ns connect $tcp $sink
$tcp attach $cf
$tcp trace cwnd_
$tcp trace ssthresh_
set ftp [new Application/FTP]
$ftp attach-agent $tcp
$ns at 0.1 "$ftp start"
# the outage: an error model on n0 -> n1 that drops every packet from 2 s to 6 s (drops are "d"
# events of the trace, so the timer's re-sends are seen)
set em [new ErrorModel]
$em unit pkt
$em set rate_ 0.0
$em ranvar [new RandomVariable/Uniform]
$em drop-target [new Agent/Null]
$ns lossmodel $em $n0 $n1
$ns at 2.0 "$em set rate_ 1.0"
$ns at 6.0 "$em set rate_ 0.0"
proc finish {} {
	global ns tf cf
	$ns flush-trace
	close $tf
	close $cf
	set f [open run.json w]
	puts $f "\{\n  \"simulator\": \"ns-2.35\",\n  \"script\": \"outage.tcl\",\n  \"duration_s\": 12,\n  \"packet_size_bytes\": 1000,\n  \"files\": \{\"trace\": \"out.tr\", \"cwnd\": \"cwnd.tr\"\}\n\}"
	close $f
	exit 0
}
$ns at 12.0 "finish"
$ns run
