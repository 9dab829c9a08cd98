/*
 * dumbbell.cc -- TCP NewReno dumbbell for tracekit samples (ns-3.37).
 *
 *   n0 (L0) --5Mb/10ms--\                         /--5Mb/10ms-- n4 (R-leaf 0)
 *                        n2 (R0) ==1Mb/20ms== n3 (R1)
 *   n1 (L1) --5Mb/10ms--/   bottleneck, no qdisc,  \--5Mb/10ms-- n5 (R-leaf 1)
 *                           DropTail device queue
 *
 * Device ids (install order): n0 dev0 = n0->n2; n1 dev0 = n1->n2; n2 dev0 = to n0, dev1 = to n1,
 * dev2 = bottleneck; n3 dev0 = bottleneck, dev1 = to n4, dev2 = to n5; n4/n5 dev0.
 * Addresses: 10.1.1.0/24 (n0-n2), 10.1.2.0/24 (n1-n2), 10.2.1.0/24 (n2-n3 bottleneck),
 * 10.3.1.0/24 (n3-n4), 10.3.2.0/24 (n3-n5).
 * Flow i: BulkSend on L_i -> PacketSink on R-leaf i, port 50000 (+i), TCP NewReno.
 *
 * No traffic-control qdisc on the bottleneck devices (see InstallBottleneck), so congestion drops
 * happen in the bottleneck device's DropTailQueue (MaxSize 10p) and show up as "d" lines
 * (.../TxQueue/Drop) in the ASCII trace and as QUEUE (3) drops in FlowMonitor.
 * Flows start at 0.5 s and 0.6 s, apps stop and the simulation ends at DURATION (default 8 s, to
 * keep each pcap under 1 MB).
 *
 * Outputs (prefix "dumbbell"):
 *   dumbbell-0-0.pcap        pcap (DLT_PPP) of the first sender's device (node 0 device 0)
 *   dumbbell-2-2.pcap        pcap of the bottleneck device of router R0 (node 2 device 2)
 *   dumbbell-3-0.pcap        pcap of the bottleneck device of router R1 (node 3 device 0)
 *   dumbbell.tr              ASCII device trace (with contexts) of exactly those three devices
 *   dumbbell.cwnd            CongestionWindow of the flow-0 sender socket, sixth.cc format
 *                            "time\told\tnew" (bytes)
 *   dumbbell-cwnd.data       the same trace source, tcp-variants-comparison.cc format "time value"
 *   dumbbell-ssth.data       SlowStartThreshold, tcp-variants-comparison.cc format (bytes)
 *   dumbbell-rtt.data        RTT (smoothed RTT estimate), tcp-variants-comparison.cc format (seconds)
 *   dumbbell-inflight.data   BytesInFlight, tcp-variants-comparison.cc format (bytes)
 *   flowmon.xml              FlowMonitor, SerializeToXmlFile("flowmon.xml", true, true)
 */

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/flow-monitor-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <fstream>
#include <iostream>
#include <string>

using namespace ns3;

NS_LOG_COMPONENT_DEFINE("TracekitDumbbell");

// ---- sixth.cc style cwnd trace ---------------------------------------------------------------
static void
CwndChange(Ptr<OutputStreamWrapper> stream, uint32_t oldCwnd, uint32_t newCwnd)
{
    *stream->GetStream() << Simulator::Now().GetSeconds() << "\t" << oldCwnd << "\t" << newCwnd
                         << std::endl;
}

// ---- tcp-variants-comparison.cc style traces (single flow: flow 0's sender) ------------------
static bool firstCwnd = true;
static bool firstSshThr = true;
static bool firstRtt = true;
static Ptr<OutputStreamWrapper> cWndStream;
static Ptr<OutputStreamWrapper> ssThreshStream;
static Ptr<OutputStreamWrapper> rttStream;
static Ptr<OutputStreamWrapper> inFlightStream;
static uint32_t cWndValue;
static uint32_t ssThreshValue;

static void
CwndTracer(uint32_t oldval, uint32_t newval)
{
    if (firstCwnd)
    {
        *cWndStream->GetStream() << "0.0 " << oldval << std::endl;
        firstCwnd = false;
    }
    *cWndStream->GetStream() << Simulator::Now().GetSeconds() << " " << newval << std::endl;
    cWndValue = newval;

    if (!firstSshThr)
    {
        *ssThreshStream->GetStream()
            << Simulator::Now().GetSeconds() << " " << ssThreshValue << std::endl;
    }
}

static void
SsThreshTracer(uint32_t oldval, uint32_t newval)
{
    if (firstSshThr)
    {
        *ssThreshStream->GetStream() << "0.0 " << oldval << std::endl;
        firstSshThr = false;
    }
    *ssThreshStream->GetStream() << Simulator::Now().GetSeconds() << " " << newval << std::endl;
    ssThreshValue = newval;

    if (!firstCwnd)
    {
        *cWndStream->GetStream() << Simulator::Now().GetSeconds() << " " << cWndValue << std::endl;
    }
}

static void
RttTracer(Time oldval, Time newval)
{
    if (firstRtt)
    {
        *rttStream->GetStream() << "0.0 " << oldval.GetSeconds() << std::endl;
        firstRtt = false;
    }
    *rttStream->GetStream() << Simulator::Now().GetSeconds() << " " << newval.GetSeconds()
                            << std::endl;
}

static void
InFlightTracer(uint32_t old [[maybe_unused]], uint32_t inFlight)
{
    *inFlightStream->GetStream() << Simulator::Now().GetSeconds() << " " << inFlight << std::endl;
}

// connect all socket traces of node 0's first TCP socket (exists once BulkSend has started)
static void
ConnectSocketTraces(std::string prefix)
{
    AsciiTraceHelper ascii;
    std::string sock = "/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/";
    Ptr<OutputStreamWrapper> sixth = ascii.CreateFileStream(prefix + ".cwnd");
    Config::ConnectWithoutContext(sock + "CongestionWindow", MakeBoundCallback(&CwndChange, sixth));

    cWndStream = ascii.CreateFileStream(prefix + "-cwnd.data");
    ssThreshStream = ascii.CreateFileStream(prefix + "-ssth.data");
    rttStream = ascii.CreateFileStream(prefix + "-rtt.data");
    inFlightStream = ascii.CreateFileStream(prefix + "-inflight.data");
    Config::ConnectWithoutContext(sock + "CongestionWindow", MakeCallback(&CwndTracer));
    Config::ConnectWithoutContext(sock + "SlowStartThreshold", MakeCallback(&SsThreshTracer));
    Config::ConnectWithoutContext(sock + "RTT", MakeCallback(&RttTracer));
    Config::ConnectWithoutContext(sock + "BytesInFlight", MakeCallback(&InFlightTracer));
}

// The bottleneck, built like PointToPointHelper::Install() but WITHOUT aggregating a
// NetDeviceQueueInterface.  Reason (ns-3.37): with the helper's NetDeviceQueueInterface, removing
// the root qdisc is not enough -- once the device queue is full it is "stopped", and
// TrafficControlLayer::Send() then silently discards packets (no trace source fires at all).
// Without it, IP hands every packet to the device, and overflow is a DropTailQueue drop, which the
// ASCII helper traces as "d .../TxQueue/Drop" and FlowMonitor counts as reason 3 (QUEUE).
static NetDeviceContainer
InstallBottleneck(Ptr<Node> a, Ptr<Node> b, std::string queueSize)
{
    Ptr<PointToPointChannel> ch = CreateObject<PointToPointChannel>();
    ch->SetAttribute("Delay", StringValue("20ms"));
    NetDeviceContainer c;
    for (Ptr<Node> n : {a, b})
    {
        Ptr<PointToPointNetDevice> d = CreateObject<PointToPointNetDevice>();
        d->SetAddress(Mac48Address::Allocate());
        d->SetAttribute("DataRate", StringValue("1Mbps"));
        n->AddDevice(d);
        Ptr<Queue<Packet>> q = CreateObject<DropTailQueue<Packet>>();
        q->SetAttribute("MaxSize", StringValue(queueSize));
        d->SetQueue(q);
        d->Attach(ch);
        c.Add(d);
    }
    return c;
}

int
main(int argc, char* argv[])
{
    uint32_t nFlows = 2;
    double duration = 8.0;
    std::string queueSize = "10p";
    uint32_t segmentSize = 1448;
    std::string prefix = "dumbbell";

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of BulkSend flows (1 or 2)", nFlows);
    cmd.AddValue("duration", "simulation stop time, s", duration);
    cmd.AddValue("queue", "bottleneck device DropTailQueue MaxSize", queueSize);
    cmd.AddValue("segsize", "TCP SegmentSize, bytes", segmentSize);
    cmd.AddValue("prefix", "output file prefix", prefix);
    cmd.Parse(argc, argv);
    NS_ABORT_MSG_UNLESS(nFlows == 1 || nFlows == 2, "flows must be 1 or 2");

    Packet::EnablePrinting();
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segmentSize));

    NodeContainer left;
    left.Create(2); // nodes 0, 1
    NodeContainer routers;
    routers.Create(2); // nodes 2, 3
    NodeContainer right;
    right.Create(2); // nodes 4, 5

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("5Mbps"));
    access.SetChannelAttribute("Delay", StringValue("10ms"));

    PointToPointHelper bottleneck; // only used for EnablePcap/EnableAscii on the bottleneck

    NetDeviceContainer l0 = access.Install(left.Get(0), routers.Get(0));
    NetDeviceContainer l1 = access.Install(left.Get(1), routers.Get(0));
    NetDeviceContainer bn = InstallBottleneck(routers.Get(0), routers.Get(1), queueSize);
    NetDeviceContainer r0 = access.Install(routers.Get(1), right.Get(0));
    NetDeviceContainer r1 = access.Install(routers.Get(1), right.Get(1));

    InternetStackHelper stack;
    stack.InstallAll();

    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    Ipv4InterfaceContainer il0 = addr.Assign(l0);
    addr.SetBase("10.1.2.0", "255.255.255.0");
    Ipv4InterfaceContainer il1 = addr.Assign(l1);
    addr.SetBase("10.2.1.0", "255.255.255.0");
    Ipv4InterfaceContainer ibn = addr.Assign(bn);
    addr.SetBase("10.3.1.0", "255.255.255.0");
    Ipv4InterfaceContainer ir0 = addr.Assign(r0);
    addr.SetBase("10.3.2.0", "255.255.255.0");
    Ipv4InterfaceContainer ir1 = addr.Assign(r1);

    // no qdisc on the bottleneck: drops happen in the device queue (traced as TxQueue/Drop).
    // (Without a NetDeviceQueueInterface, Ipv4AddressHelper::Assign installs no qdisc; remove one
    // anyway if present.)
    TrafficControlHelper tch;
    for (uint32_t i = 0; i < bn.GetN(); i++)
    {
        Ptr<TrafficControlLayer> tc = bn.Get(i)->GetNode()->GetObject<TrafficControlLayer>();
        if (tc->GetRootQueueDiscOnDevice(bn.Get(i)))
        {
            tch.Uninstall(bn.Get(i));
        }
    }

    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    Ipv4Address dst[2] = {ir0.GetAddress(1), ir1.GetAddress(1)};
    for (uint32_t i = 0; i < nFlows; i++)
    {
        uint16_t port = 50000 + i;
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(dst[i], port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        ApplicationContainer sa = src.Install(left.Get(i));
        sa.Start(Seconds(0.5 + 0.1 * i));
        sa.Stop(Seconds(duration));
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer ka = sink.Install(right.Get(i));
        ka.Start(Seconds(0.0));
        ka.Stop(Seconds(duration));
    }
    Simulator::Schedule(Seconds(0.5 + 0.00001), &ConnectSocketTraces, prefix);

    // pcap (DLT_PPP) of n0 dev0 and of both bottleneck devices; ASCII of the same three devices
    access.EnablePcap(prefix, l0.Get(0));
    bottleneck.EnablePcap(prefix, bn);
    AsciiTraceHelper ascii;
    Ptr<OutputStreamWrapper> tr = ascii.CreateFileStream(prefix + ".tr");
    access.EnableAscii(tr, l0.Get(0));
    bottleneck.EnableAscii(tr, bn);

    FlowMonitorHelper fmh;
    Ptr<FlowMonitor> fm = fmh.InstallAll();

    Simulator::Stop(Seconds(duration));
    Simulator::Run();

    fm->CheckForLostPackets();
    fm->SerializeToXmlFile("flowmon.xml", true, true);

    Ptr<Ipv4FlowClassifier> cls = DynamicCast<Ipv4FlowClassifier>(fmh.GetClassifier());
    for (auto& kv : fm->GetFlowStats())
    {
        Ipv4FlowClassifier::FiveTuple t = cls->FindFlow(kv.first);
        std::cout << "flow " << kv.first << " " << t.sourceAddress << ":" << t.sourcePort << " -> "
                  << t.destinationAddress << ":" << t.destinationPort << " tx " << kv.second.txPackets
                  << " rx " << kv.second.rxPackets << " txBytes " << kv.second.txBytes
                  << " rxBytes " << kv.second.rxBytes << " dropped";
        for (uint32_t r = 0; r < kv.second.packetsDropped.size(); r++)
        {
            if (kv.second.packetsDropped[r])
            {
                std::cout << " reason" << r << "=" << kv.second.packetsDropped[r];
            }
        }
        std::cout << std::endl;
    }
    Simulator::Destroy();
    return 0;
}
