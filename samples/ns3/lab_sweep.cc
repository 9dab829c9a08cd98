/*
 * lab_sweep.cc -- one bulk TCP flow through a 1 Mb/s bottleneck, for the ns-3 lab runs of
 * docs/labs.md (receiver window sweep; TcpLinuxReno against TcpNewReno). ns-3.37.
 *
 *   n0 --10Mb/s 5ms-- n1 ==1Mb/s 50ms, DropTail <queue>== n2
 *
 * BulkSend n0 (10.1.1.1:49153) -> PacketSink n2 (10.1.2.2:50000) from 0.1 s to <duration> s.
 * The receiver window is ns3::TcpSocket::RcvBufSize (the advertised window never exceeds it);
 * window scaling stays on (ns-3 default) so a 32 KB buffer can be advertised (RFC 7323 s2).
 * The bottleneck has no qdisc (no NetDeviceQueueInterface, as in dumbbell.cc): drops are
 * DropTailQueue drops, FlowMonitor reason 3 (QUEUE).
 *
 * Outputs (prefix <prefix>): <prefix>-0-0.pcap (the sender's device only, snaplen <snaplen>: headers
 * only, the IP total length keeps the payload size), flowmon.xml (SerializeToXmlFile(.., false,
 * false): no histograms, no probes), stdout: per FlowMonitor flow tx/rx packets, bytes, lost, drops.
 */

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/flow-monitor-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"

#include <iostream>
#include <string>

using namespace ns3;

static NetDeviceContainer
InstallBottleneck(Ptr<Node> a, Ptr<Node> b, std::string queueSize)
{
    Ptr<PointToPointChannel> ch = CreateObject<PointToPointChannel>();
    ch->SetAttribute("Delay", StringValue("50ms"));
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
    double duration = 3.0;
    std::string queueSize = "10p";
    std::string variant = "TcpNewReno";
    uint32_t segmentSize = 536;
    uint32_t rwnd = 131072;
    uint32_t snaplen = 96;
    std::string prefix = "lab";

    CommandLine cmd(__FILE__);
    cmd.AddValue("duration", "simulation stop time, s", duration);
    cmd.AddValue("queue", "bottleneck device DropTailQueue MaxSize", queueSize);
    cmd.AddValue("variant", "TCP congestion control TypeId name (ns3::<variant>)", variant);
    cmd.AddValue("segsize", "TCP SegmentSize, bytes", segmentSize);
    cmd.AddValue("rwnd", "receiver buffer (TcpSocket::RcvBufSize), bytes", rwnd);
    cmd.AddValue("snaplen", "pcap capture size, bytes", snaplen);
    cmd.AddValue("prefix", "output file prefix", prefix);
    cmd.Parse(argc, argv);

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(1);
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::" + variant));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segmentSize));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rwnd));
    Config::SetDefault("ns3::PcapFileWrapper::CaptureSize", UintegerValue(snaplen));

    NodeContainer nodes;
    nodes.Create(3);
    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("10Mbps"));
    access.SetChannelAttribute("Delay", StringValue("5ms"));
    NetDeviceContainer left = access.Install(nodes.Get(0), nodes.Get(1));
    NetDeviceContainer bn = InstallBottleneck(nodes.Get(1), nodes.Get(2), queueSize);

    InternetStackHelper stack;
    stack.InstallAll();
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    addr.Assign(left);
    addr.SetBase("10.1.2.0", "255.255.255.0");
    Ipv4Address dst = addr.Assign(bn).GetAddress(1);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    uint16_t port = 50000;
    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(dst, port));
    src.SetAttribute("MaxBytes", UintegerValue(0));
    ApplicationContainer sa = src.Install(nodes.Get(0));
    sa.Start(Seconds(0.1));
    sa.Stop(Seconds(duration));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer ka = sink.Install(nodes.Get(2));
    ka.Start(Seconds(0.0));
    ka.Stop(Seconds(duration));

    access.EnablePcap(prefix, left.Get(0));

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
                  << " rxBytes " << kv.second.rxBytes << " lost " << kv.second.lostPackets
                  << " dropped";
        for (uint32_t r = 0; r < kv.second.packetsDropped.size(); r++)
        {
            if (kv.second.packetsDropped[r])
            {
                std::cout << " reason" << r << "=" << kv.second.packetsDropped[r];
            }
        }
        std::cout << std::endl;
    }
    std::cout << "sink received " << DynamicCast<PacketSink>(ka.Get(0))->GetTotalRx() << " bytes"
              << std::endl;
    Simulator::Destroy();
    return 0;
}
