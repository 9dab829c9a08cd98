# wireless.tcl -- small ad-hoc wireless scenario (shape of ns-2's simple-wireless.tcl /
# Marc Greis' wireless tutorial), for tracekit samples (ns-2.35).
#
# 3 mobile nodes, 802.11 (2 Mb/s), TwoRayGround, DSDV, one TCP (Reno) flow node 0 -> node 1.
#   node 0 at (50,250) fixed; node 2 at (250,250) fixed (relay); node 1 starts at (450,250),
#   out of range of node 0 (250 m radio range), so packets go 0 -> 2 -> 1; at 14 s node 1 moves
#   towards (150,260) at 30 m/s and becomes a direct neighbour of node 0.
#   TCP (Agent/TCP/Reno, packetSize_ 512, window_ 4) + Agent/TCPSink, FTP from 10 s (DSDV needs ~10 s to build routes); stop at DURATION.
#
# Usage: ns wireless.tcl old|new ?DURATION?  (default old, 18 s)
#   old -> wireless.tr      (CMU "old" wireless trace format)
#   new -> wireless_new.tr  ($ns use-newtrace)
# Agent, router and MAC traces are ON, movement trace OFF.

set fmt [lindex $argv 0]
if { $fmt == "" } { set fmt old }
set duration [lindex $argv 1]
if { $duration == "" } { set duration 18 }

set val(chan)   Channel/WirelessChannel
set val(prop)   Propagation/TwoRayGround
set val(netif)  Phy/WirelessPhy
set val(mac)    Mac/802_11
set val(ifq)    Queue/DropTail/PriQueue
set val(ll)     LL
set val(ant)    Antenna/OmniAntenna
set val(ifqlen) 50
set val(nn)     3
set val(rp)     DSDV
set val(x)      500
set val(y)      500

set ns [new Simulator]
global defaultRNG
$defaultRNG seed 12345

if { $fmt == "new" } {
	$ns use-newtrace
	set tracefile [open wireless_new.tr w]
} else {
	set tracefile [open wireless.tr w]
}
$ns trace-all $tracefile

set topo [new Topography]
$topo load_flatgrid $val(x) $val(y)
create-god $val(nn)

set chan_1 [new $val(chan)]
$ns node-config -adhocRouting $val(rp) \
	-llType $val(ll) \
	-macType $val(mac) \
	-ifqType $val(ifq) \
	-ifqLen $val(ifqlen) \
	-antType $val(ant) \
	-propType $val(prop) \
	-phyType $val(netif) \
	-channel $chan_1 \
	-topoInstance $topo \
	-agentTrace ON \
	-routerTrace ON \
	-macTrace ON \
	-movementTrace OFF

for {set i 0} {$i < $val(nn)} {incr i} {
	set node_($i) [$ns node]
	$node_($i) random-motion 0
}

$node_(0) set X_ 50.0
$node_(0) set Y_ 250.0
$node_(0) set Z_ 0.0
$node_(1) set X_ 450.0
$node_(1) set Y_ 250.0
$node_(1) set Z_ 0.0
$node_(2) set X_ 250.0
$node_(2) set Y_ 250.0
$node_(2) set Z_ 0.0

$ns at 14.0 "$node_(1) setdest 150.0 260.0 30.0"

set tcp [new Agent/TCP/Reno]
$tcp set class_ 2
$tcp set packetSize_ 512
$tcp set window_ 4
set sink [new Agent/TCPSink]
$ns attach-agent $node_(0) $tcp
$ns attach-agent $node_(1) $sink
$ns connect $tcp $sink
set ftp [new Application/FTP]
$ftp attach-agent $tcp
$ns at 10.0 "$ftp start"

for {set i 0} {$i < $val(nn)} {incr i} {
	$ns at $duration "$node_($i) reset"
}
$ns at $duration "stop"
$ns at [expr $duration + 0.01] "puts \"NS EXITING...\" ; $ns halt"
proc stop {} {
	global ns tracefile
	$ns flush-trace
	close $tracefile
}

puts "Starting Simulation..."
$ns run
