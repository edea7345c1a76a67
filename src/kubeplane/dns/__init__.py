"""The cluster DNS: CoreDNS's `kubernetes` plugin as `kubeplane up` runs it.

records.py  the zone's answers from Services, EndpointSlices and Namespaces (ClusterZone)
server.py   dnspython messages over asyncio UDP and TCP (DNSServer, DNSListener)
forward.py  names outside the zone to the host's resolvers (Forwarder)
app.py      informers feeding the zone, the listeners (ClusterDNS, run_cluster_dns)

kubeadm's addon objects (the kube-dns Service, the coredns identity) are cmd/cluster_dns.py's;
what pods are told (their resolv.conf) is the kubelet's, kubelet/network/dns.py.
"""
