/*
 * fragments.cc -- a bulk TCP transfer whose every data segment is IP-fragmented (ns-3.37).
 *
 *   n0 (sender) --10Mb/2ms, MTU 1500-- n1 (router) ==2Mb/20ms, MTU 1500, DropTail 20p== n2 (receiver)
 *
 * TCP NewReno with SegmentSize 1460 and the ns-3 defaults otherwise (timestamps, SACK and window
 * scaling on), so a full data segment is 1460 + 32 (TCP header with the 12-byte timestamp option)
 * + 20 (IPv4) = 1512 bytes > the 1500-byte MTU: Ipv4L3Protocol::DoFragment sends it as two
 * fragments (1480 + 52 IP payload bytes), as the ns-3 lab with its largest segment size does.
 * BulkSend n0 -> n2 (10.1.2.2:50000) of MAXBYTES bytes from 0.1 s; the 2 Mb/s bottleneck queue
 * of 20 packets (fragments count as packets) drops some fragments in slow start.
 *
 * Outputs (prefix "fragments"):
 *   fragments-0-0.pcap   pcap (DLT_PPP) of the sender's device (node 0 device 0)
 *   fragments.tr         ASCII device trace (with contexts) of the same device
 */

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <iostream>
#include <string>

using namespace ns3;

int
main(int argc, char* argv[])
{
    uint32_t segmentSize = 1460;
    uint64_t maxBytes = 200000;
    double duration = 5.0;
    std::string prefix = "fragments";
    CommandLine cmd;
    cmd.AddValue("segsize", "TCP SegmentSize, bytes", segmentSize);
    cmd.AddValue("maxbytes", "bytes BulkSend sends", maxBytes);
    cmd.AddValue("duration", "simulation stop time, s", duration);
    cmd.AddValue("prefix", "output file prefix", prefix);
    cmd.Parse(argc, argv);

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segmentSize));

    NodeContainer nodes;
    nodes.Create(3);
    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("10Mbps"));
    access.SetDeviceAttribute("Mtu", UintegerValue(1500));
    access.SetChannelAttribute("Delay", StringValue("2ms"));
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue("2Mbps"));
    bottleneck.SetDeviceAttribute("Mtu", UintegerValue(1500));
    bottleneck.SetChannelAttribute("Delay", StringValue("20ms"));
    bottleneck.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("20p"));
    NetDeviceContainer d01 = access.Install(nodes.Get(0), nodes.Get(1));
    NetDeviceContainer d12 = bottleneck.Install(nodes.Get(1), nodes.Get(2));

    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    addr.Assign(d01);
    addr.SetBase("10.1.2.0", "255.255.255.0");
    Ipv4InterfaceContainer i12 = addr.Assign(d12);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    uint16_t port = 50000;
    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(i12.GetAddress(1), port));
    src.SetAttribute("MaxBytes", UintegerValue(maxBytes));
    ApplicationContainer sa = src.Install(nodes.Get(0));
    sa.Start(Seconds(0.1));
    sa.Stop(Seconds(duration));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer ka = sink.Install(nodes.Get(2));
    ka.Start(Seconds(0.0));
    ka.Stop(Seconds(duration));

    access.EnablePcap(prefix, d01.Get(0));
    AsciiTraceHelper ascii;
    access.EnableAscii(ascii.CreateFileStream(prefix + ".tr"), d01.Get(0));

    Simulator::Stop(Seconds(duration));
    Simulator::Run();
    Ptr<PacketSink> ps = DynamicCast<PacketSink>(ka.Get(0));
    std::cout << "received_bytes " << ps->GetTotalRx() << std::endl;
    Simulator::Destroy();
    return 0;
}
