-- ferroce.lua: Wireshark / tshark dissector for the ferroce transport headers.
--
-- ferroce frames are RoCEv2-shaped: Ethernet [802.1Q] / IPv4 | IPv6 / UDP (dst 4791) / BTH /
-- ferroce header(s) / payload / ICRC. The specification is proto/src/wire/ (crate ferroce-proto);
-- docs/wire-format.md describes the same layout in prose.
--
-- Usage:
--   tshark -X lua_script:tools/wireshark/ferroce.lua -r capture.pcap -V
--   wireshark -X lua_script:tools/wireshark/ferroce.lua capture.pcap
--
-- How it hooks in: Wireshark's InfiniBand dissector owns UDP port 4791 (RoCEv2). For the
-- manufacturer-specific opcodes 0xC0-0xFF it shows the BTH ("Opcode: Unknown (192)"), puts
-- everything after the BTH, ICRC included, into one "infiniband.vendor" blob, and calls neither
-- its "infiniband.payload" heuristic list nor its Decode-As table. So this script wraps the
-- InfiniBand handle registered on udp.port 4791: it calls it first (the built-in BTH tree and
-- the infiniband.bth.* fields stay as they are), then, when the BTH opcode is a ferroce opcode,
-- adds a "ferroce" tree decoding the BTH fields as ferroce uses them and every header after the
-- BTH, and verifies the ICRC (which the built-in dissector shows for standard opcodes but never
-- checks). Frames with other opcodes are left entirely to the InfiniBand dissector. For another
-- UDP port use "Decode As" / `-d udp.port==PORT,ferroce`.

local ferroce = Proto("ferroce", "ferroce transport")

local ROCEV2_PORT = 4791
local BTH_LEN = 12
local FDH_LEN = 24
local RETH_LEN = 12
local IMM_LEN = 4
local ACK_LEN = 48
local NAK_LEN = 16
local CM_LEN = 32
local ICRC_LEN = 4
local SACK_BITS = 256

-- BTH opcodes, named as ferroce_proto::wire::Opcode::name().
local OPCODES = {
    [0xC0] = "send",
    [0xC1] = "send_imm",
    [0xC2] = "write",
    [0xC3] = "write_imm",
    [0xC8] = "ack",
    [0xC9] = "nak",
    [0xCA] = "cm",
}

-- ferroce_proto::wire::NakReason.
local NAK_REASONS = {
    [0x20] = "ReceiverNotReady",
    [0x61] = "InvalidRequest",
    [0x62] = "RemoteAccess",
    [0x70] = "OutOfWindow",
}

-- ferroce_proto::wire::CmKind.
local CM_KINDS = {
    [1] = "Request",
    [2] = "Reply",
    [3] = "ReadyToUse",
    [4] = "Reject",
    [5] = "DisconnectRequest",
    [6] = "DisconnectReply",
    [7] = "TagModes",
}

local ICRC_STATUS = { [0] = "unverified", [1] = "good", [2] = "bad" }

local f = {
    -- The BTH as ferroce reads it.
    opcode = ProtoField.uint8("ferroce.opcode", "Packet type", base.HEX, OPCODES,
        nil, "BTH opcode"),
    solicited = ProtoField.bool("ferroce.solicited", "Solicited event", 8, nil, 0x80,
        "BTH SE bit"),
    conn = ProtoField.uint24("ferroce.conn", "Connection id", base.HEX, nil, nil,
        "Receiver's connection id (BTH DestQP)"),
    ack_req = ProtoField.bool("ferroce.ack_req", "AckReq", 8, nil, 0x80,
        "Acknowledge this flow now (BTH AckReq bit)"),
    fsn = ProtoField.uint24("ferroce.fsn", "FSN", base.DEC, nil, nil,
        "Flow sequence number (BTH PSN): the packet's FSN for data and NAK, "
            .. "the cumulative FSN for ACK"),

    -- Data: FDH, RETH, immediate, payload.
    fdh = ProtoField.none("ferroce.fdh", "Data header (FDH)"),
    fdh_flow = ProtoField.uint16("ferroce.fdh.flow", "Flow", base.DEC),
    fdh_tag = ProtoField.uint16("ferroce.fdh.tag", "Tag", base.DEC),
    fdh_msn = ProtoField.uint32("ferroce.fdh.msn", "MSN", base.DEC, nil, nil,
        "Message sequence number within the Tag: completion order of the Tag's messages"),
    fdh_ssn = ProtoField.uint32("ferroce.fdh.ssn", "SSN", base.DEC, nil, nil,
        "Send sequence number within the Tag: the receive buffer a Send consumes (0 for Writes)"),
    fdh_offset = ProtoField.uint32("ferroce.fdh.offset", "Offset", base.DEC, nil, nil,
        "Byte offset of this packet's payload within the message"),
    fdh_msg_len = ProtoField.uint32("ferroce.fdh.msg_len", "Message length", base.DEC),
    fdh_timestamp = ProtoField.uint32("ferroce.fdh.timestamp", "Timestamp (ns)", base.DEC, nil,
        nil, "Sender's transmit timestamp, echoed in ACKs"),
    fdh_first = ProtoField.bool("ferroce.fdh.first", "First packet of message", base.NONE, nil,
        nil, "offset == 0"),
    fdh_last = ProtoField.bool("ferroce.fdh.last", "Last packet of message", base.NONE, nil, nil,
        "offset + payload length == message length"),
    reth = ProtoField.none("ferroce.reth", "RDMA extended transport header (RETH)"),
    reth_va = ProtoField.uint64("ferroce.reth.va", "Virtual address", base.HEX, nil, nil,
        "Remote address of this packet's first payload byte"),
    reth_rkey = ProtoField.uint32("ferroce.reth.rkey", "Remote key", base.HEX),
    reth_msg_va = ProtoField.uint64("ferroce.reth.msg_va", "Message base address", base.HEX,
        nil, nil, "va - offset: remote address of the message's first byte"),
    imm = ProtoField.uint32("ferroce.imm", "Immediate data", base.HEX),
    payload = ProtoField.bytes("ferroce.payload", "Payload"),
    payload_len = ProtoField.uint32("ferroce.payload_len", "Payload length", base.DEC),

    -- ACK.
    ack = ProtoField.none("ferroce.ack", "Acknowledgement (ACK)"),
    ack_flow = ProtoField.uint16("ferroce.ack.flow", "Flow", base.DEC),
    ack_flags = ProtoField.uint8("ferroce.ack.flags", "Flags", base.HEX),
    ack_ecn_echo = ProtoField.bool("ferroce.ack.ecn_echo", "ECN echo", 8, nil, 0x01,
        "At least one acknowledged packet arrived CE-marked"),
    ack_reserved = ProtoField.bytes("ferroce.ack.reserved", "Reserved"),
    ack_ce_count = ProtoField.uint16("ferroce.ack.ce_count", "CE count", base.DEC, nil, nil,
        "CE-marked packets since the previous ACK of this flow"),
    ack_refused = ProtoField.uint16("ferroce.ack.refused", "Refused", base.DEC, nil, nil,
        "Terminal refusals (remote access / invalid request NAKs) on this flow since it was " ..
        "initialised, wrapping"),
    ack_rate_hint = ProtoField.uint32("ferroce.ack.rate_hint_mbps", "Rate hint (Mb/s)",
        base.DEC, nil, nil, "Receiver's fair-share rate for this sender (0 = no hint)"),
    ack_ts_echo = ProtoField.uint32("ferroce.ack.ts_echo", "Timestamp echo (ns)", base.DEC),
    ack_cum_fsn = ProtoField.uint24("ferroce.ack.cum_fsn", "Cumulative FSN", base.DEC, nil,
        nil, "BTH PSN of an ACK: the next expected FSN (every FSN before it was received); "
            .. "SACK bit i reports FSN cum + 1 + i"),
    ack_sack = ProtoField.bytes("ferroce.ack.sack", "SACK bitmap", base.NONE,
        "256 bits; bit i (byte i / 8, bit i % 8, LSB first) reports FSN cum + 1 + i"),
    ack_sack_count = ProtoField.uint16("ferroce.ack.sack_count", "SACKed packets", base.DEC),
    ack_sack_ranges = ProtoField.string("ferroce.ack.sack_ranges", "SACKed FSNs",
        base.NONE, "Ranges of SACKed FSNs relative to the cumulative FSN"),
    ack_sack_fsn = ProtoField.uint24("ferroce.ack.sack_fsn", "SACKed FSN", base.DEC),

    -- NAK.
    nak = ProtoField.none("ferroce.nak", "Negative acknowledgement (NAK)"),
    nak_flow = ProtoField.uint16("ferroce.nak.flow", "Flow", base.DEC),
    nak_reason = ProtoField.uint8("ferroce.nak.reason", "Reason", base.HEX, NAK_REASONS),
    nak_reserved = ProtoField.bytes("ferroce.nak.reserved", "Reserved"),
    nak_tag = ProtoField.uint16("ferroce.nak.tag", "Tag", base.DEC),
    nak_msn = ProtoField.uint32("ferroce.nak.msn", "MSN", base.DEC),
    nak_offset = ProtoField.uint32("ferroce.nak.offset", "Offset", base.DEC),
    nak_fsn = ProtoField.uint24("ferroce.nak.fsn", "Refused FSN", base.DEC, nil, nil,
        "BTH PSN of a NAK: the FSN of the refused packet"),

    -- CM.
    cm = ProtoField.none("ferroce.cm", "Connection management (CM)"),
    cm_kind = ProtoField.uint8("ferroce.cm.kind", "Kind", base.DEC, CM_KINDS),
    cm_flags = ProtoField.uint8("ferroce.cm.flags", "Flags", base.HEX, nil, nil,
        "Kind-specific flags (reject reason for Reject)"),
    cm_path_count = ProtoField.uint16("ferroce.cm.path_count", "Path count", base.DEC),
    cm_src_conn = ProtoField.uint32("ferroce.cm.src_conn", "Source connection id", base.HEX),
    cm_dst_conn = ProtoField.uint32("ferroce.cm.dst_conn", "Destination connection id",
        base.HEX),
    cm_mtu = ProtoField.uint16("ferroce.cm.mtu", "MTU", base.DEC),
    cm_tag_count = ProtoField.uint16("ferroce.cm.tag_count", "Tag count", base.DEC),
    cm_initial_fsn = ProtoField.uint32("ferroce.cm.initial_fsn", "Initial FSN", base.DEC),
    cm_rate = ProtoField.uint32("ferroce.cm.rate_mbps", "Line rate (Mb/s)", base.DEC),
    cm_tag_modes = ProtoField.uint64("ferroce.cm.tag_modes", "Tag modes", base.HEX, nil, nil,
        "Completion mode of Tags 0-63: bit set = ordered"),

    -- ICRC.
    icrc = ProtoField.uint32("ferroce.icrc", "ICRC", base.HEX, nil, nil,
        "Invariant CRC (CRC-32 value, sent least significant byte first)"),
    icrc_computed = ProtoField.uint32("ferroce.icrc.computed", "Computed ICRC", base.HEX),
    icrc_status = ProtoField.uint8("ferroce.icrc.status", "ICRC status", base.DEC, ICRC_STATUS),
}

local fields = {}
for _, v in pairs(f) do
    fields[#fields + 1] = v
end
ferroce.fields = fields

local e = {
    truncated = ProtoExpert.new("ferroce.truncated", "Packet shorter than its ferroce headers",
        expert.group.MALFORMED, expert.severity.ERROR),
    trailing = ProtoExpert.new("ferroce.trailing", "Bytes after a non-data header",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_bth = ProtoExpert.new("ferroce.bad_bth",
        "BTH pad count, version or P_Key is not what ferroce sends",
        expert.group.PROTOCOL, expert.severity.ERROR),
    bad_reason = ProtoExpert.new("ferroce.bad_reason", "Unknown NAK reason",
        expert.group.PROTOCOL, expert.severity.ERROR),
    bad_kind = ProtoExpert.new("ferroce.bad_kind", "Unknown CM kind",
        expert.group.PROTOCOL, expert.severity.ERROR),
    bad_icrc = ProtoExpert.new("ferroce.bad_icrc", "ICRC does not match",
        expert.group.CHECKSUM, expert.severity.ERROR),
    reserved = ProtoExpert.new("ferroce.reserved_nonzero", "Reserved bytes are not zero",
        expert.group.PROTOCOL, expert.severity.WARN),
    ecn_echo = ProtoExpert.new("ferroce.ecn_echo", "ECN echo: congestion experienced",
        expert.group.SEQUENCE, expert.severity.CHAT),
}
ferroce.experts = { e.truncated, e.trailing, e.bad_bth, e.bad_reason, e.bad_kind, e.bad_icrc,
    e.reserved, e.ecn_echo }

-- CRC-32 (IEEE 802.3, reflected), as zlib / crc32fast compute it.
local CRC_TABLE = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if bit32.band(c, 1) ~= 0 then
            c = bit32.bxor(0xEDB88320, bit32.rshift(c, 1))
        else
            c = bit32.rshift(c, 1)
        end
    end
    CRC_TABLE[i] = c
end

-- Feeds the bytes of the Lua string `s` into a running (pre-inverted) CRC state.
local function crc_update(crc, s)
    local band, bxor, rshift = bit32.band, bit32.bxor, bit32.rshift
    for i = 1, #s do
        crc = bxor(CRC_TABLE[band(bxor(crc, s:byte(i)), 0xff)], rshift(crc, 8))
    end
    return crc
end

-- The IP header of the packet being dissected (last instance), via field extractors.
local ip_field = Field.new("ip")
local ipv6_field = Field.new("ipv6")

local function last_instance(field)
    local all = { field() }
    return all[#all]
end

-- Computes the RoCEv2 ICRC (proto/src/wire/icrc.rs) of the frame whose UDP payload is `tvb`
-- and whose UDP ports are given, or nil when the IP header cannot be found.
local function compute_icrc(tvb, src_port, dst_port)
    local v4, v6 = last_instance(ip_field), last_instance(ipv6_field)
    local ip, is_v6
    if v4 and v6 then
        is_v6 = v6.offset > v4.offset
        ip = is_v6 and v6 or v4
    else
        ip, is_v6 = v4 or v6, v6 ~= nil
    end
    if ip == nil then
        return nil
    end
    local hdr_len = is_v6 and 40 or 20
    local ok, raw = pcall(function() return ip.range:raw(0, hdr_len) end)
    if not ok or raw == nil or #raw ~= hdr_len then
        return nil
    end
    local b = { raw:byte(1, hdr_len) }
    if is_v6 then
        b[1] = bit32.bor(b[1], 0x0f) -- traffic class, upper nibble
        b[2], b[3], b[4] = 0xff, 0xff, 0xff -- traffic class lower nibble, flow label
        b[8] = 0xff -- hop limit
    else
        b[2] = 0xff -- TOS
        b[9] = 0xff -- TTL
        b[11], b[12] = 0xff, 0xff -- header checksum
    end
    local udp_len = tvb:reported_len() + 8
    local udp = string.char(
        bit32.rshift(src_port, 8), bit32.band(src_port, 0xff),
        bit32.rshift(dst_port, 8), bit32.band(dst_port, 0xff),
        bit32.rshift(udp_len, 8), bit32.band(udp_len, 0xff),
        0xff, 0xff) -- checksum masked
    local bth = tvb:raw(0, 4) .. "\255" .. tvb:raw(5, BTH_LEN - 5) -- byte 4 masked
    local crc = 0xffffffff
    crc = crc_update(crc, string.rep("\255", 8)) -- masked LRH
    crc = crc_update(crc, string.char(table.unpack(b)))
    crc = crc_update(crc, udp)
    crc = crc_update(crc, bth)
    crc = crc_update(crc, tvb:raw(BTH_LEN, tvb:len() - BTH_LEN - ICRC_LEN))
    return bit32.bnot(crc)
end

-- "cum+1..cum+3, cum+10": the SACKed FSNs relative to the cumulative FSN.
local function sack_ranges(bits)
    local parts = {}
    local i = 0
    while i < SACK_BITS do
        if bits[i] then
            local j = i
            while j + 1 < SACK_BITS and bits[j + 1] do
                j = j + 1
            end
            if j == i then
                parts[#parts + 1] = string.format("cum+%d", i + 1)
            else
                parts[#parts + 1] = string.format("cum+%d..cum+%d", i + 1, j + 1)
            end
            i = j + 1
        else
            i = i + 1
        end
    end
    if #parts == 0 then
        return "none"
    end
    return table.concat(parts, ", ")
end

local function check_reserved(item, range)
    for i = 0, range:len() - 1 do
        if range(i, 1):uint() ~= 0 then
            item:add_proto_expert_info(e.reserved)
            return
        end
    end
end

local function dissect_data(tvb, tree, op, off, body_end, info)
    local fdh = tree:add(f.fdh, tvb(off, FDH_LEN))
    fdh:add(f.fdh_flow, tvb(off, 2))
    fdh:add(f.fdh_tag, tvb(off + 2, 2))
    fdh:add(f.fdh_msn, tvb(off + 4, 4))
    fdh:add(f.fdh_ssn, tvb(off + 8, 4))
    fdh:add(f.fdh_offset, tvb(off + 12, 4))
    fdh:add(f.fdh_msg_len, tvb(off + 16, 4))
    fdh:add(f.fdh_timestamp, tvb(off + 20, 4))
    local msg_offset = tvb(off + 12, 4):uint()
    local msg_len = tvb(off + 16, 4):uint()
    local is_send = op == 0xC0 or op == 0xC1
    info[#info + 1] = string.format("flow=%d tag=%d msn=%d%s off=%d/%d", tvb(off, 2):uint(),
        tvb(off + 2, 2):uint(), tvb(off + 4, 4):uint(),
        is_send and string.format(" ssn=%d", tvb(off + 8, 4):uint()) or "", msg_offset, msg_len)
    local at = off + FDH_LEN
    if op == 0xC2 or op == 0xC3 then
        local reth = tree:add(f.reth, tvb(at, RETH_LEN))
        reth:add(f.reth_va, tvb(at, 8))
        reth:add(f.reth_rkey, tvb(at + 8, 4))
        local va = tvb(at, 8):uint64()
        reth:add(f.reth_msg_va, tvb(at, 8), va - UInt64(msg_offset)):set_generated()
        info[#info + 1] = string.format("va=0x%s rkey=0x%08x", va:tohex(),
            tvb(at + 8, 4):uint())
        at = at + RETH_LEN
    end
    if op == 0xC1 or op == 0xC3 then
        tree:add(f.imm, tvb(at, IMM_LEN))
        info[#info + 1] = string.format("imm=0x%08x", tvb(at, IMM_LEN):uint())
        at = at + IMM_LEN
    end
    local payload_len = body_end - at
    -- With a short snapshot length only part of the payload was captured.
    local captured = math.max(0, math.min(payload_len, tvb:len() - at))
    local range = tvb(at, captured)
    tree:add(f.payload_len, range, payload_len):set_generated()
    if captured > 0 then
        tree:add(f.payload, range)
    end
    fdh:add(f.fdh_first, tvb(off + 12, 4), msg_offset == 0):set_generated()
    fdh:add(f.fdh_last, tvb(off + 12, 4), msg_offset + payload_len == msg_len):set_generated()
    info[#info + 1] = string.format("len=%d", payload_len)
end

local function dissect_ack(tvb, tree, off, cum, info)
    local ack = tree:add(f.ack, tvb(off, ACK_LEN))
    ack:add(f.ack_flow, tvb(off, 2))
    local flags = ack:add(f.ack_flags, tvb(off + 2, 1))
    local ece = bit32.band(tvb(off + 2, 1):uint(), 0x01) ~= 0
    flags:add(f.ack_ecn_echo, tvb(off + 2, 1))
    if ece then
        flags:add_proto_expert_info(e.ecn_echo)
    end
    check_reserved(ack:add(f.ack_reserved, tvb(off + 3, 1)), tvb(off + 3, 1))
    ack:add(f.ack_ce_count, tvb(off + 4, 2))
    ack:add(f.ack_refused, tvb(off + 6, 2))
    ack:add(f.ack_rate_hint, tvb(off + 8, 4))
    ack:add(f.ack_ts_echo, tvb(off + 12, 4))
    ack:add(f.ack_cum_fsn, tvb(9, 3)):set_generated()
    local sack_range = tvb(off + 16, SACK_BITS / 8)
    local sack = ack:add(f.ack_sack, sack_range)
    local bits, count = {}, 0
    for i = 0, SACK_BITS - 1 do
        local byte = tvb(off + 16 + math.floor(i / 8), 1):uint()
        if bit32.band(byte, bit32.lshift(1, i % 8)) ~= 0 then
            bits[i] = true
            count = count + 1
        end
    end
    local ranges = sack_ranges(bits)
    sack:add(f.ack_sack_count, sack_range, count):set_generated()
    sack:add(f.ack_sack_ranges, sack_range, ranges):set_generated()
    if count > 0 then
        local list = sack:add(sack_range, string.format("SACKed FSNs (absolute, %d)", count))
        list:set_generated()
        for i = 0, SACK_BITS - 1 do
            if bits[i] then
                local byte_range = tvb(off + 16 + math.floor(i / 8), 1)
                list:add(f.ack_sack_fsn, byte_range, (cum + 1 + i) % 0x1000000):set_generated()
            end
        end
    end
    info[#info + 1] = string.format("flow=%d cum=%d sacked=%d%s ce=%d rate=%dMb/s",
        tvb(off, 2):uint(), cum, count, ece and " ECE" or "", tvb(off + 4, 2):uint(),
        tvb(off + 8, 4):uint())
end

local function dissect_nak(tvb, tree, off, fsn, info)
    local nak = tree:add(f.nak, tvb(off, NAK_LEN))
    nak:add(f.nak_flow, tvb(off, 2))
    local reason = tvb(off + 2, 1):uint()
    local item = nak:add(f.nak_reason, tvb(off + 2, 1))
    if NAK_REASONS[reason] == nil then
        item:add_proto_expert_info(e.bad_reason)
    end
    check_reserved(nak:add(f.nak_reserved, tvb(off + 3, 1)), tvb(off + 3, 1))
    nak:add(f.nak_tag, tvb(off + 4, 2))
    check_reserved(nak:add(f.nak_reserved, tvb(off + 6, 2)), tvb(off + 6, 2))
    nak:add(f.nak_msn, tvb(off + 8, 4))
    nak:add(f.nak_offset, tvb(off + 12, 4))
    nak:add(f.nak_fsn, tvb(9, 3)):set_generated()
    info[#info + 1] = string.format("flow=%d fsn=%d %s tag=%d msn=%d off=%d",
        tvb(off, 2):uint(), fsn, NAK_REASONS[reason] or string.format("reason=0x%02x", reason),
        tvb(off + 4, 2):uint(), tvb(off + 8, 4):uint(), tvb(off + 12, 4):uint())
end

local function dissect_cm(tvb, tree, off, info)
    local cm = tree:add(f.cm, tvb(off, CM_LEN))
    local kind = tvb(off, 1):uint()
    local item = cm:add(f.cm_kind, tvb(off, 1))
    if CM_KINDS[kind] == nil then
        item:add_proto_expert_info(e.bad_kind)
    end
    cm:add(f.cm_flags, tvb(off + 1, 1))
    cm:add(f.cm_path_count, tvb(off + 2, 2))
    cm:add(f.cm_src_conn, tvb(off + 4, 4))
    cm:add(f.cm_dst_conn, tvb(off + 8, 4))
    cm:add(f.cm_mtu, tvb(off + 12, 2))
    cm:add(f.cm_tag_count, tvb(off + 14, 2))
    cm:add(f.cm_initial_fsn, tvb(off + 16, 4))
    cm:add(f.cm_rate, tvb(off + 20, 4))
    cm:add(f.cm_tag_modes, tvb(off + 24, 8))
    info[#info + 1] = string.format("%s src_conn=0x%x dst_conn=0x%x paths=%d",
        CM_KINDS[kind] or string.format("kind=%d", kind), tvb(off + 4, 4):uint(),
        tvb(off + 8, 4):uint(), tvb(off + 2, 2):uint())
end

local HEADER_LEN = {
    [0xC0] = FDH_LEN,
    [0xC1] = FDH_LEN + IMM_LEN,
    [0xC2] = FDH_LEN + RETH_LEN,
    [0xC3] = FDH_LEN + RETH_LEN + IMM_LEN,
    [0xC8] = ACK_LEN,
    [0xC9] = NAK_LEN,
    [0xCA] = CM_LEN,
}

-- Adds the ferroce tree for a UDP payload that starts with a BTH carrying a ferroce opcode.
local function dissect_ferroce(tvb, pinfo, root, src_port, dst_port)
    local op = tvb(0, 1):uint()
    local tree = root:add(ferroce, tvb())
    pinfo.cols.protocol:set("ferroce")

    local bth = tvb(0, BTH_LEN)
    tree:add(f.opcode, tvb(0, 1))
    tree:add(f.solicited, tvb(1, 1))
    tree:add(f.conn, tvb(5, 3))
    tree:add(f.ack_req, tvb(8, 1))
    tree:add(f.fsn, tvb(9, 3))
    local flags = tvb(1, 1):uint()
    if bit32.band(flags, 0x3f) ~= 0 or tvb(2, 2):uint() ~= 0xffff then
        tree:add_proto_expert_info(e.bad_bth)
    end
    local conn, fsn = tvb(5, 3):uint(), tvb(9, 3):uint()
    local ack_req = bit32.band(tvb(8, 1):uint(), 0x80) ~= 0
    local info = { string.format("%s conn=0x%06x fsn=%d%s", OPCODES[op], conn, fsn,
        ack_req and " AckReq" or "") }
    tree:append_text(string.format(", %s, conn 0x%06x, FSN %d", OPCODES[op], conn, fsn))

    local hdr_len = HEADER_LEN[op]
    -- The packet's length as sent (reported) and as captured (a snapshot length may cut it).
    local len, captured = tvb:reported_len(), tvb:len()
    if len < BTH_LEN + hdr_len + ICRC_LEN or captured < BTH_LEN + hdr_len then
        tree:add_proto_expert_info(e.truncated)
        pinfo.cols.info:set(table.concat(info, " ") .. " [truncated]")
        return
    end
    local off = BTH_LEN
    local body_end = len - ICRC_LEN
    if op == 0xC8 then
        dissect_ack(tvb, tree, off, fsn, info)
    elseif op == 0xC9 then
        dissect_nak(tvb, tree, off, fsn, info)
    elseif op == 0xCA then
        dissect_cm(tvb, tree, off, info)
    else
        dissect_data(tvb, tree, op, off, body_end, info)
    end
    if op >= 0xC8 and body_end > off + hdr_len then
        local n = math.max(0, math.min(body_end, captured) - off - hdr_len)
        tree:add(tvb(off + hdr_len, n), "Trailing bytes")
            :add_proto_expert_info(e.trailing)
    end

    if captured < len then
        pinfo.cols.info:set(table.concat(info, " ") .. " [ICRC not captured]")
        return
    end
    local icrc_range = tvb(body_end, ICRC_LEN)
    local icrc_item = tree:add_le(f.icrc, icrc_range)
    local sent = icrc_range:le_uint()
    local computed = compute_icrc(tvb, src_port, dst_port)
    if computed == nil then
        icrc_item:add(f.icrc_status, icrc_range, 0):set_generated()
    else
        icrc_item:add(f.icrc_computed, icrc_range, computed):set_generated()
        local good = computed == sent
        local st = icrc_item:add(f.icrc_status, icrc_range, good and 1 or 2)
        st:set_generated()
        if good then
            icrc_item:append_text(" [correct]")
        else
            icrc_item:append_text(string.format(" [incorrect, should be 0x%08x]", computed))
            st:add_proto_expert_info(e.bad_icrc)
            info[#info + 1] = "[BAD ICRC]"
        end
    end
    pinfo.cols.info:set(table.concat(info, " "))
end

local udp_port_table = DissectorTable.get("udp.port")
local infiniband = udp_port_table:get_dissector(ROCEV2_PORT)

function ferroce.dissector(tvb, pinfo, root)
    -- The InfiniBand dissector rewrites pinfo's ports (destination port := DestQP), so keep
    -- the UDP ports for the ICRC.
    local src_port, dst_port = pinfo.src_port, pinfo.dst_port
    local ours = tvb:len() >= BTH_LEN and OPCODES[tvb(0, 1):uint()] ~= nil
    if infiniband ~= nil then
        -- The built-in RoCEv2 dissector first: it owns the BTH fields (infiniband.bth.*).
        -- Its bounds exceptions are not Lua errors and would end the dissection of the
        -- frame, so for a ferroce frame cut short by the snapshot length it gets only the
        -- captured bytes (it shows them as one vendor-data blob anyway).
        local ib_tvb = tvb
        if ours and tvb:len() < tvb:reported_len() then
            ib_tvb = tvb:range(0, tvb:len()):tvb()
        end
        pcall(function() infiniband:call(ib_tvb, pinfo, root) end)
    end
    if ours then
        dissect_ferroce(tvb, pinfo, root, src_port, dst_port)
    end
end

udp_port_table:add(ROCEV2_PORT, ferroce)
