"""Network faults on a real cluster: roles on their own loopback addresses, iptables, a proxy.

Used by tests/test_network_faults.py and benchmarks/chaos.py. Needs root and
iptables (`rules.iptables_missing()` says what is missing).
"""
