# dumbbell.tcl -- multi-flow TCP dumbbell for tracekit samples (ns-2.35).
#
#   s0 \                          / d0
#   s1 -- r0 ==== bottleneck ==== r1 -- d1
#   s2 /   (node 4)            (node 5)  \ d2
#   s3                                    d3
#
# Node ids: s0..s3 = 0..3, r0 = 4, r1 = 5, d0..d3 = 6..9.
# Access links 10 Mb/s, delays 5/10/15/20 ms on both sides (different RTTs); bottleneck r0-r1
# 1.5 Mb/s 20 ms, DropTail, queue-limit 20 packets.  Flow i: s_i -> d_i, fid i, FTP (infinite),
# packetSize_ 1000 (1040-byte packets on the wire), window_ 64.
#   flow 0: Agent/TCP/Reno     + Agent/TCPSink          start 0.1 s
#   flow 1: Agent/TCP/Newreno  + Agent/TCPSink          start 0.6 s
#   flow 2: Agent/TCP/Sack1    + Agent/TCPSink/Sack1    start 1.1 s
#   flow 3: Agent/TCP (Tahoe)  + Agent/TCPSink/DelAck   start 1.6 s
#
# Usage: ns dumbbell.tcl ?DURATION?   (default 10 s).  Writes in the current directory:
#   out.tr    $ns trace-all (every link, every event)
#   cwnd.tr   agent variable trace of cwnd_ of all four senders ($tcp attach $f; $tcp trace cwnd_)
#   queue.tr  queue monitor trace of the bottleneck r0->r1 ("q -t T -s 4 -d 5 -l BYTES -p PKTS")
#   run.json  parameters

set duration [lindex $argv 0]
if { $duration == "" } { set duration 10 }

set ns [new Simulator]
global defaultRNG
$defaultRNG seed 12345

set tf [open out.tr w]
$ns trace-all $tf
set cf [open cwnd.tr w]
set qf [open queue.tr w]

set N 4
for {set i 0} {$i < $N} {incr i} { set s($i) [$ns node] }
set r0 [$ns node]
set r1 [$ns node]
for {set i 0} {$i < $N} {incr i} { set d($i) [$ns node] }

set bnBw 1.5Mb
set bnDelay 20ms
set bnQueue 20
$ns duplex-link $r0 $r1 $bnBw $bnDelay DropTail
$ns queue-limit $r0 $r1 $bnQueue
$ns queue-limit $r1 $r0 $bnQueue

set delays {5ms 10ms 15ms 20ms}
for {set i 0} {$i < $N} {incr i} {
	$ns duplex-link $s($i) $r0 10Mb [lindex $delays $i] DropTail
	$ns duplex-link $r1 $d($i) 10Mb [lindex $delays $i] DropTail
}

# queue monitor on the bottleneck: one "q" line per enqueue / dequeue / drop
set qm [$ns monitor-queue $r0 $r1 $qf 0.1]
[$ns link $r0 $r1] start-tracing

set variants {Reno Newreno Sack1 Tahoe}
set tcpClass(Reno) Agent/TCP/Reno;       set sinkClass(Reno) Agent/TCPSink
set tcpClass(Newreno) Agent/TCP/Newreno; set sinkClass(Newreno) Agent/TCPSink
set tcpClass(Sack1) Agent/TCP/Sack1;     set sinkClass(Sack1) Agent/TCPSink/Sack1
set tcpClass(Tahoe) Agent/TCP;           set sinkClass(Tahoe) Agent/TCPSink/DelAck

for {set i 0} {$i < $N} {incr i} {
	set v [lindex $variants $i]
	set tcp($i) [new $tcpClass($v)]
	$tcp($i) set fid_ $i
	$tcp($i) set window_ 64
	$tcp($i) set packetSize_ 1000
	$ns attach-agent $s($i) $tcp($i)
	set sink($i) [new $sinkClass($v)]
	$ns attach-agent $d($i) $sink($i)
	$ns connect $tcp($i) $sink($i)
	$tcp($i) attach $cf
	$tcp($i) trace cwnd_
	set ftp($i) [new Application/FTP]
	$ftp($i) attach-agent $tcp($i)
	$ns at [expr 0.1 + 0.5*$i] "$ftp($i) start"
}

proc finish {} {
	global ns tf cf qf duration N variants tcpClass sinkClass
	$ns flush-trace
	close $tf
	close $cf
	close $qf
	set f [open run.json w]
	puts $f "\{"
	puts $f "  \"simulator\": \"ns-2.35\","
	puts $f "  \"script\": \"dumbbell.tcl\","
	puts $f "  \"duration_s\": $duration,"
	puts $f "  \"nodes\": \{\"senders\": \[0, 1, 2, 3\], \"r0\": 4, \"r1\": 5, \"receivers\": \[6, 7, 8, 9\]\},"
	puts $f "  \"bottleneck\": \{\"from\": 4, \"to\": 5, \"bandwidth\": \"1.5Mb\", \"delay\": \"20ms\", \"queue\": \"DropTail\", \"queue_limit_pkts\": 20\},"
	puts $f "  \"access_links\": \{\"bandwidth\": \"10Mb\", \"delays\": \[\"5ms\", \"10ms\", \"15ms\", \"20ms\"\]\},"
	puts $f "  \"packet_size_bytes\": 1000,"
	puts $f "  \"packet_size_on_wire_bytes\": 1040,"
	puts $f "  \"window_pkts\": 64,"
	puts $f "  \"flows\": \["
	for {set i 0} {$i < $N} {incr i} {
		set v [lindex $variants $i]
		set sep [expr {$i < $N-1 ? "," : ""}]
		puts $f "    \{\"fid\": $i, \"variant\": \"$v\", \"tcp_agent\": \"$tcpClass($v)\", \"sink_agent\": \"$sinkClass($v)\", \"src\": \"$i.0\", \"dst\": \"[expr $i+6].0\", \"start_s\": [expr 0.1 + 0.5*$i]\}$sep"
	}
	puts $f "  \],"
	puts $f "  \"files\": \{\"trace\": \"out.tr\", \"cwnd\": \"cwnd.tr\", \"queue\": \"queue.tr\"\}"
	puts $f "\}"
	close $f
	exit 0
}

$ns at $duration "finish"
$ns run
