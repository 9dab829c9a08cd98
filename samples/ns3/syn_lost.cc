/*
 * A SYN lost once or twice on its way (ns-3.37): what the sender's TCP starts its data with.
 *
 * Two nodes, 5 Mb/s and 10 ms point-to-point; a BulkSend of 100 kB (TCP NewReno, SegmentSize
 * 1448) to a PacketSink. The receiver's device drops the first --lost packets it receives (a
 * ReceiveListErrorModel: the SYN and its re-sends), downstream of the sender's capture.
 *
 * Outputs (PREFIX from --prefix):
 *   PREFIX-0-0.pcap     the sender's device
 *   PREFIX-cwnd.data    CongestionWindow of the sender's socket, "time bytes" per change
 *   PREFIX-ssth.data    SlowStartThreshold, "time bytes" per change (4294967295: none yet)
 *
 * ns-3's retransmission timer in SYN_SENT only sends the SYN again (3 s, then doubled): it sets
 * neither ssthresh nor cwnd, so the data starts with the initial window and no ssthresh.
 */
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"

using namespace ns3;

static Ptr<OutputStreamWrapper> cwndStream;
static Ptr<OutputStreamWrapper> ssthStream;

static void
CwndTracer(uint32_t, uint32_t now)
{
    *cwndStream->GetStream() << Simulator::Now().GetSeconds() << " " << now << std::endl;
}

static void
SsthTracer(uint32_t, uint32_t now)
{
    *ssthStream->GetStream() << Simulator::Now().GetSeconds() << " " << now << std::endl;
}

// the sender's socket exists once BulkSend has started
static void
ConnectTraces(std::string prefix)
{
    AsciiTraceHelper ascii;
    cwndStream = ascii.CreateFileStream(prefix + "-cwnd.data");
    ssthStream = ascii.CreateFileStream(prefix + "-ssth.data");
    std::string sock = "/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/";
    Config::ConnectWithoutContext(sock + "CongestionWindow", MakeCallback(&CwndTracer));
    Config::ConnectWithoutContext(sock + "SlowStartThreshold", MakeCallback(&SsthTracer));
}

int
main(int argc, char* argv[])
{
    uint32_t lost = 1;
    std::string prefix = "syn_lost";
    CommandLine cmd;
    cmd.AddValue("lost", "packets the receiver's device drops first (the SYN and its re-sends)", lost);
    cmd.AddValue("prefix", "output file prefix", prefix);
    cmd.Parse(argc, argv);
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));

    NodeContainer nodes;
    nodes.Create(2);
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue("5Mbps"));
    p2p.SetChannelAttribute("Delay", StringValue("10ms"));
    NetDeviceContainer dev = p2p.Install(nodes);
    Ptr<ReceiveListErrorModel> drop = CreateObject<ReceiveListErrorModel>();
    std::list<uint32_t> first;
    for (uint32_t i = 0; i < lost; ++i)
    {
        first.push_back(i);
    }
    drop->SetList(first);
    dev.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(drop));

    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.1.0", "255.255.255.0");
    Ipv4InterfaceContainer ifs = addr.Assign(dev);

    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(1), 9));
    src.SetAttribute("MaxBytes", UintegerValue(100000));
    ApplicationContainer app = src.Install(nodes.Get(0));
    app.Start(Seconds(0.1));
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 9));
    sink.Install(nodes.Get(1)).Start(Seconds(0.0));
    Simulator::Schedule(Seconds(0.1) + NanoSeconds(1), &ConnectTraces, prefix);
    p2p.EnablePcap(prefix, dev.Get(0), false);

    Simulator::Stop(Seconds(20));
    Simulator::Run();
    Simulator::Destroy();
    return 0;
}
