/*
 * dumbbell10.cc -- ten TCP NewReno flows through one bottleneck, for tracekit samples (ns-3.37).
 *
 *   s0..s9 --10Mb/(2+2i) ms--\                           /--10Mb/2ms-- k0..k9
 *                             r0 ==2Mb/10ms, 20p== r1
 *
 * Node ids: s_i = i (0..9), r0 = 10, r1 = 11, k_i = 12 + i.
 * Device ids (install order): s_i dev0 = s_i->r0; r0 dev i = to s_i, r0 dev 10 = bottleneck;
 * r1 dev0 = bottleneck, r1 dev (1 + i) = to k_i; k_i dev0.
 * Addresses: 10.1.(i+1).0/24 (s_i-r0), 10.2.1.0/24 (bottleneck), 10.3.(i+1).0/24 (r1-k_i). No NAT:
 * a connection has the same 4-tuple on every device.
 * Flow i: BulkSend s_i -> PacketSink k_i port 50000 + i, starts at 0.5 + 0.05 i s. Access delays
 * differ (2 + 2i ms) so the flows' RTTs (~28..64 ms) and shares differ.
 *
 * The bottleneck has no qdisc (built without a NetDeviceQueueInterface, as in dumbbell.cc): drops
 * are DropTailQueue (20p) drops, FlowMonitor reason 3 (QUEUE).
 *
 * Outputs (prefix "db10"), pcap snaplen 96 bytes (PcapFileWrapper::CaptureSize: PPP + IPv4 + TCP
 * with options fit; payload bytes are cut, the IP total length keeps the payload size):
 *   db10-0-0.pcap    first sender's device (node 0 device 0): flow 0 only, at its sender
 *   db10-10-10.pcap  r0's bottleneck device (node 10 device 10): all flows, before the bottleneck queue
 *   db10-11-0.pcap   r1's bottleneck device (node 11 device 0): all flows, after the bottleneck
 *   db10-12-0.pcap   first receiver's device (node 12 device 0): flow 0 only, at its receiver
 *   flowmon.xml      FlowMonitor, SerializeToXmlFile("flowmon.xml", false, false) (no histograms)
 *   stdout           per FlowMonitor flow: 5-tuple, tx/rx packets and bytes, drops
 */

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/flow-monitor-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <iostream>
#include <string>

using namespace ns3;

static NetDeviceContainer
InstallBottleneck(Ptr<Node> a, Ptr<Node> b, std::string rate, std::string delay, std::string queueSize)
{
    Ptr<PointToPointChannel> ch = CreateObject<PointToPointChannel>();
    ch->SetAttribute("Delay", StringValue(delay));
    NetDeviceContainer c;
    for (Ptr<Node> n : {a, b})
    {
        Ptr<PointToPointNetDevice> d = CreateObject<PointToPointNetDevice>();
        d->SetAddress(Mac48Address::Allocate());
        d->SetAttribute("DataRate", StringValue(rate));
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
    uint32_t nFlows = 10;
    double duration = 5.0;
    std::string rate = "2Mbps";
    std::string queueSize = "20p";
    uint32_t segmentSize = 1448;
    uint32_t snaplen = 96;
    std::string prefix = "db10";

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of sender/receiver pairs (BulkSend flows)", nFlows);
    cmd.AddValue("duration", "simulation stop time, s", duration);
    cmd.AddValue("rate", "bottleneck DataRate", rate);
    cmd.AddValue("queue", "bottleneck device DropTailQueue MaxSize", queueSize);
    cmd.AddValue("segsize", "TCP SegmentSize, bytes", segmentSize);
    cmd.AddValue("snaplen", "pcap capture size, bytes", snaplen);
    cmd.AddValue("prefix", "output file prefix", prefix);
    cmd.Parse(argc, argv);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segmentSize));
    Config::SetDefault("ns3::PcapFileWrapper::CaptureSize", UintegerValue(snaplen));

    NodeContainer senders;
    senders.Create(nFlows);
    NodeContainer routers;
    routers.Create(2);
    NodeContainer sinks;
    sinks.Create(nFlows);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("10Mbps"));
    PointToPointHelper bottleneck; // only used for EnablePcap on the bottleneck

    std::vector<NetDeviceContainer> left, right;
    for (uint32_t i = 0; i < nFlows; i++)
    {
        access.SetChannelAttribute("Delay", TimeValue(MilliSeconds(2 + 2 * i)));
        left.push_back(access.Install(senders.Get(i), routers.Get(0)));
    }
    NetDeviceContainer bn = InstallBottleneck(routers.Get(0), routers.Get(1), rate, "10ms", queueSize);
    access.SetChannelAttribute("Delay", StringValue("2ms"));
    for (uint32_t i = 0; i < nFlows; i++)
    {
        right.push_back(access.Install(routers.Get(1), sinks.Get(i)));
    }

    InternetStackHelper stack;
    stack.InstallAll();
    Ipv4AddressHelper addr;
    std::vector<Ipv4Address> dst;
    for (uint32_t i = 0; i < nFlows; i++)
    {
        addr.SetBase(("10.1." + std::to_string(i + 1) + ".0").c_str(), "255.255.255.0");
        addr.Assign(left[i]);
    }
    addr.SetBase("10.2.1.0", "255.255.255.0");
    addr.Assign(bn);
    for (uint32_t i = 0; i < nFlows; i++)
    {
        addr.SetBase(("10.3." + std::to_string(i + 1) + ".0").c_str(), "255.255.255.0");
        dst.push_back(addr.Assign(right[i]).GetAddress(1));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    for (uint32_t i = 0; i < nFlows; i++)
    {
        uint16_t port = 50000 + i;
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(dst[i], port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        ApplicationContainer sa = src.Install(senders.Get(i));
        sa.Start(Seconds(0.5 + 0.05 * i));
        sa.Stop(Seconds(duration));
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer ka = sink.Install(sinks.Get(i));
        ka.Start(Seconds(0.0));
        ka.Stop(Seconds(duration));
    }

    access.EnablePcap(prefix, left[0].Get(0));
    bottleneck.EnablePcap(prefix, bn);
    access.EnablePcap(prefix, right[0].Get(1));

    FlowMonitorHelper fmh;
    Ptr<FlowMonitor> fm = fmh.InstallAll();
    Simulator::Stop(Seconds(duration));
    Simulator::Run();
    fm->CheckForLostPackets();
    fm->SerializeToXmlFile("flowmon.xml", false, false);

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
