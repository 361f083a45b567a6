#!/usr/bin/env python3
"""Recompute the RoCEv2 ICRC of every frame of a pcap with Scapy, as an independent oracle.

Usage: icrc_check.py FILE.pcap

Scapy's RoCE layer (scapy.contrib.roce.BTH) computes the ICRC itself: CRC-32 (zlib) over
8 bytes of 0xFF, the IP header with its variant fields set to ones (IPv4 TOS, TTL, checksum;
IPv6 traffic class, flow label, hop limit), the UDP header with checksum 0xFFFF, the BTH with
FECN, BECN and the reserved bits set, and everything after the BTH up to the ICRC; it packs the
CRC with struct.pack("!I", crc)[::-1], i.e. least significant byte first. BTH.compute_icrc reads
all of that from the dissected layers below the BTH, not from its argument.

Prints one tab-separated line per frame (lines starting with '#' are comments):

    index  ip_version  vlan  opcode  dqpn  psn  wire_icrc  scapy_icrc

where wire_icrc is the frame's last four bytes as sent (hex) and scapy_icrc is Scapy's
recomputed ICRC in wire order (hex). A frame Scapy cannot read as RoCEv2 prints
"index<TAB>error<TAB>reason".
"""

import struct
import sys

from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q
from scapy.packet import bind_layers
from scapy.utils import rdpcap

ROCEV2_PORT = 4791

# scapy.contrib.roce binds UDP dport 4791 to BTH on import; bind again explicitly so the
# script does not depend on that side effect.
bind_layers(UDP, BTH, dport=ROCEV2_PORT)


def main(path):
    print("#index\tip_version\tvlan\topcode\tdqpn\tpsn\twire_icrc\tscapy_icrc")
    for index, pkt in enumerate(rdpcap(path)):
        bth = pkt.getlayer(BTH)
        if bth is None:
            print(f"{index}\terror\tno BTH layer ({pkt.summary()})")
            continue
        if pkt.haslayer(IPv6):
            version = 6
        elif pkt.haslayer(IP):
            version = 4
        else:
            print(f"{index}\terror\tno IP layer")
            continue
        vlan = 1 if pkt.haslayer(Dot1Q) else 0
        # The trailing FCSField "icrc" holds the frame's last four bytes, read big-endian.
        wire = struct.pack("!I", bth.icrc)
        computed = bth.compute_icrc(None)
        print(
            f"{index}\t{version}\t{vlan}\t{bth.opcode}\t{bth.dqpn}\t{bth.psn}"
            f"\t{wire.hex()}\t{computed.hex()}"
        )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
