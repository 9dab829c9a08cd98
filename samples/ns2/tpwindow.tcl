# tpwindow.tcl -- the classic "TCP window" lab (EPFL COM-208 / UNSW COMP3331 tpWindow.tcl),
# parameterised so tracekit can have real ns-2.35 runs of it.
#
# Usage (run inside the output directory; every file is written to the current directory):
#   ns tpwindow.tcl WINDOW DELAY ?VARIANT? ?QUEUE? ?DURATION? ?ERRRATE? ?SEED? ?BYTES?
#     WINDOW    window_ of the TCP agent, in packets (the lab's argv 0), e.g. 66
#     DELAY     one-way link delay (the lab's argv 1), e.g. 100ms
#     VARIANT   Tahoe (Agent/TCP, default) | Reno | NewReno | Sack1 | Vegas
#     QUEUE     DropTail queue-limit on n0->n1 in packets (default 20)
#     DURATION  simulated seconds; finish is scheduled at this time (default 20; the lab used 60)
#     ERRRATE   packet error rate of an ErrorModel (unit pkt, uniform ranvar) on n0->n1 (default 0 = none)
#     SEED      seed of the RNG used by the error model and of ns's defaultRNG (default 1; must be > 0)
#     BYTES     0 (default) = infinite FTP, as in the lab; N > 0 = FTP sends exactly N bytes
#               ("$ftp send N": ceil(N/500) packets of 500 B) -- for download-time experiments
#   Arguments may be given as "-" to keep the default.
#
# Outputs (same names/formats as the lab, except that the lab's outWindow.tr is called out.tr and
# no nam file is written):
#   out.tr        $ns trace-all (normal ns-2 wired trace)
#   Window.tr     "$now $cwnd" every 0.02 s from 0.1 s  (lab proc plotWindow, verbatim)
#   WindowMon.tr  "$now $drops  $droprate $tput $queue $avgtput" every 1 s from 0.1 s
#                 (lab proc plotTPut, verbatim; flow monitor on link n0->n1)
#   run.json      the parameters of this run (+ completion time of a fixed-size transfer)

proc arg {i default} {
	global argv
	set v [lindex $argv $i]
	if { $v == "" || $v == "-" } { return $default }
	return $v
}

#Create a simulator object.
set ns [new Simulator]

set windowSize [arg 0 66]
set linkDelay  [arg 1 100ms]
set variant    [arg 2 Tahoe]
set queueSize  [arg 3 20]
# duration of simulation
set duration   [arg 4 20]
set errRate    [arg 5 0]
set seed       [arg 6 1]
set nbytes     [arg 7 0]
set pktSize    500

switch -- $variant {
	Tahoe   { set tcpClass Agent/TCP;          set sinkClass Agent/TCPSink }
	Reno    { set tcpClass Agent/TCP/Reno;     set sinkClass Agent/TCPSink }
	NewReno { set tcpClass Agent/TCP/Newreno;  set sinkClass Agent/TCPSink }
	Sack1   { set tcpClass Agent/TCP/Sack1;    set sinkClass Agent/TCPSink/Sack1 }
	Vegas   { set tcpClass Agent/TCP/Vegas;    set sinkClass Agent/TCPSink }
	default { puts stderr "unknown variant $variant"; exit 1 }
}

# select random seed for NS (the lab used "ns-random 0", i.e. a new seed every run; we want
# reproducible runs).  Small raw seeds give correlated MRG32k3a streams in ns-2 (seed 2 ~ 2 x seed 1,
# and the first draw is ~0 so the first packet is always dropped), so we follow the ns manual's
# advice for independent replications: fixed base seed 12345, then SEED x next-substream.
proc seed_rng {rng seed} {
	$rng seed 12345
	for {set i 0} {$i < $seed} {incr i} { $rng next-substream }
}
global defaultRNG
seed_rng $defaultRNG $seed

#Open the trace file
set file2 [open out.tr w]
set winfile [open Window.tr w]
$ns trace-all $file2

set doneAt -1

#Define a 'finish' procedure
proc finish {} {
	global ns file2 winfile monfile
	$ns flush-trace
	close $file2
	close $winfile
	close $monfile
	write_runjson
	exit 0
}

#Create 2 nodes
set n0 [$ns node]
set n1 [$ns node]

#Create a link between them
$ns duplex-link $n0 $n1 1Mbps $linkDelay DropTail

$ns queue-limit $n0 $n1 $queueSize
set flink [$ns link $n0 $n1]

# Optional packet error model on n0->n1.  Installed BEFORE the flow monitor, so the monitor's
# SnoopQueue/In sits in front of it: an error-model loss is counted as an arrival and as a drop
# (pdrops_) of flow 1, and appears in out.tr as a "d" line with no preceding "+" line.
if { $errRate > 0 } {
	set emrng [new RNG]
	seed_rng $emrng $seed
	set emrv [new RandomVariable/Uniform]
	$emrv use-rng $emrng
	set em [new ErrorModel]
	$em unit pkt
	$em set rate_ $errRate
	$em ranvar $emrv
	$ns lossmodel $em $n0 $n1
}

#Set flow monitor
set monfile [open WindowMon.tr w]
set fmon [$ns makeflowmon Fid]
$fmon reset

#$fmon attach $monfile
$ns attach-fmon $flink $fmon

#Create a TCP agent and attach it to node n0
set tcp0 [new $tcpClass]
$tcp0 set window_ $windowSize
$tcp0 set fid_ 1
$tcp0 set packetSize_ $pktSize
$ns attach-agent $n0 $tcp0

# Create a FTP traffic source and attach it to tcp0
set ftp0 [new Application/FTP]
$ftp0 set packetSize_ $pktSize

$ftp0 set interval_ 0.01
$ftp0 attach-agent $tcp0

#Create a TCP Sink  agent (a traffic sink) and attach it to node n1
set tcpSink0 [new $sinkClass]
$ns attach-agent $n1 $tcpSink0

#Connect the traffic source with the traffic sink
$ns connect $tcp0 $tcpSink0

#Schedule events for the FTP agent
if { $nbytes > 0 } {
	# fixed-size transfer; Agent/TCP calls "done" when the last segment is acknowledged
	$ns at 0.5 "$ftp0 send $nbytes"
	$tcp0 proc done {} {
		global ns doneAt
		if { $doneAt < 0 } { set doneAt [$ns now] }
	}
} else {
	$ns at 0.5 "$ftp0 start"
}

proc plotWindow {tcpSource file} {
	global ns windowSize
	set time 0.02
	set now [$ns now]
	set cwnd [$tcpSource set cwnd_]
	if { $cwnd < $windowSize } then {
		puts $file "$now $cwnd"
	} else {

		puts $file "$now $windowSize"
	}
	$ns at [expr $now+$time] "plotWindow $tcpSource $file"
}

proc plotTPut {file} {
	global ns fmon lastpktsd
	set time 1.0
	set now [$ns now]
	# get flow classifier
	set fcl [$fmon classifier]
	# get flow number 1
	set flow [$fcl lookup auto 0 0 1]

	if { $flow !="" } then {
		set drops [$flow set pdrops_]
		set pktsa [$flow set parrivals_]
		set pktsd [$flow set pdepartures_]
		set queue [$flow set pkts_]
		set tput [expr 1.0*($pktsd -$lastpktsd)/$time]
		set avgtput [expr 1.0*$pktsd/($now - 0.5)]
		set lastpktsd $pktsd
		if { $pktsa > 0 } then {
			set droprate [expr 1.0*$drops / $pktsa]
		} else {
			set droprate 0
		}
		puts $file "$now $drops  $droprate $tput $queue $avgtput"
	}

	$ns at [expr $now+$time] "plotTPut $file"
}
set lastpktsd 0

proc jstr {s} { return "\"$s\"" }

proc write_runjson {} {
	global windowSize linkDelay variant tcpClass sinkClass queueSize duration errRate seed nbytes \
	       pktSize doneAt tcp0
	set f [open run.json w]
	puts $f "\{"
	puts $f "  \"simulator\": \"ns-2.35\","
	puts $f "  \"script\": \"tpwindow.tcl\","
	puts $f "  \"variant\": [jstr $variant],"
	puts $f "  \"tcp_agent\": [jstr $tcpClass],"
	puts $f "  \"sink_agent\": [jstr $sinkClass],"
	puts $f "  \"window_pkts\": $windowSize,"
	puts $f "  \"delay\": [jstr $linkDelay],"
	puts $f "  \"bandwidth\": \"1Mb\","
	puts $f "  \"queue_limit_pkts\": $queueSize,"
	puts $f "  \"queue_type\": \"DropTail\","
	puts $f "  \"error_rate\": $errRate,"
	puts $f "  \"error_model\": [expr {$errRate > 0 ? "\"ErrorModel unit pkt, RandomVariable/Uniform, \$ns lossmodel n0 n1 (before attach-fmon)\"" : "null"}],"
	puts $f "  \"seed\": $seed,"
	puts $f "  \"rng\": \"RNG seed 12345 then next-substream x seed (error model RNG and defaultRNG)\","
	puts $f "  \"duration_s\": $duration,"
	puts $f "  \"ftp_start_s\": 0.5,"
	puts $f "  \"packet_size_bytes\": $pktSize,"
	puts $f "  \"packet_size_on_wire_bytes\": [expr $pktSize + 40],"
	puts $f "  \"fid\": 1,"
	if { $nbytes > 0 } {
		puts $f "  \"transfer_bytes\": $nbytes,"
		puts $f "  \"transfer_pkts\": [expr ($nbytes + $pktSize - 1) / $pktSize],"
		# download time: the FTP start (the agent sends its SYN then) -> "done" (the last
		# segment acknowledged); the one transfer time (tracekit's transfer_s measures the same)
		if { $doneAt >= 0 } {
			puts $f "  \"download_time_s\": [format %.6f [expr $doneAt - 0.5]],"
		} else {
			puts $f "  \"download_time_s\": null,"
		}
	} else {
		puts $f "  \"transfer_bytes\": null,"
	}
	puts $f "  \"files\": \{\"trace\": \"out.tr\", \"window\": \"Window.tr\", \"monitor\": \"WindowMon.tr\"\},"
	puts $f "  \"window_sample_s\": 0.02,"
	puts $f "  \"monitor_sample_s\": 1.0"
	puts $f "\}"
	close $f
}

$ns at 0.1 "plotWindow $tcp0 $winfile"
$ns at 0.1 "plotTPut $monfile"

#Call the finish procedure after $duration seconds of simulation time
$ns at $duration "finish"

#Run the simulation
$ns run
