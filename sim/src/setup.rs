//! A NIC's programmed state as a file (TOML or JSON): MAC, memory, regions, connections,
//! flows and posted receive buffers. `ferroce replay` reads it to set up the NIC a capture is
//! replayed into; the demo writes the receiver's so its capture can be replayed.

use ferroce_driver::{Device, DeviceError, Nic, SimMemory};
use ferroce_proto::hsi::{ConnectionEntry, RegionEntry, tables};
use ferroce_proto::wire::EthernetAddress;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// A mapped range of host memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySetup {
    /// IO virtual address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
}

/// A memory region table entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionSetup {
    /// Table index (rkey = index << 8 | key).
    pub index: u32,
    /// Key byte.
    pub key: u8,
    /// Rights: any of "remote_write", "remote_read", "local_write".
    pub access: Vec<String>,
    /// First byte.
    pub base: u64,
    /// Length.
    pub length: u64,
}

/// A connection table entry and its flows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionSetup {
    /// Local connection id.
    pub id: u32,
    /// Peer's connection id.
    pub peer_conn: u32,
    /// Our IP address on this connection.
    pub local_ip: IpAddr,
    /// Peer IP address.
    pub peer_ip: IpAddr,
    /// Peer MAC.
    pub peer_mac: String,
    /// 802.1Q TCI, if tagged.
    #[serde(default)]
    pub vlan_tci: Option<u16>,
    /// DSCP.
    #[serde(default)]
    pub dscp: u8,
    /// First flow-table index.
    #[serde(default)]
    pub flow_base: u16,
    /// Flow count.
    pub flow_count: u16,
    /// First Tag context.
    #[serde(default)]
    pub tag_base: u16,
    /// Tag count.
    pub tag_count: u16,
    /// First FSN every flow expects.
    #[serde(default)]
    pub initial_fsn: u32,
    /// Rate hint stamped on ACKs (Mb/s).
    #[serde(default)]
    pub rate_hint_mbps: u32,
}

/// A posted receive buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecvSetup {
    /// Tag context (connection's tag_base + Tag).
    pub tag_ctx: u32,
    /// SSN of the Send that takes it.
    pub ssn: u32,
    /// DMA address.
    pub addr: u64,
    /// Length.
    pub len: u32,
}

/// Everything to program into one NIC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicSetup {
    /// Our MAC address.
    pub mac: String,
    /// ACK coalescing (data packets per ACK).
    #[serde(default)]
    pub ack_coalesce: Option<u32>,
    /// Host memory to map.
    #[serde(default)]
    pub memory: Vec<MemorySetup>,
    /// Memory regions.
    #[serde(default)]
    pub regions: Vec<RegionSetup>,
    /// Connections.
    #[serde(default)]
    pub connections: Vec<ConnectionSetup>,
    /// Posted receive buffers.
    #[serde(default)]
    pub recv_buffers: Vec<RecvSetup>,
}

/// Why a setup could not be applied.
#[derive(Debug)]
pub enum SetupError {
    /// A field's value is not valid (the message names it).
    Invalid(String),
    /// The NIC refused a table write.
    Device(DeviceError),
}

impl core::fmt::Display for SetupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SetupError::Invalid(m) => write!(f, "invalid setup: {m}"),
            SetupError::Device(e) => write!(f, "NIC refused the setup: {e}"),
        }
    }
}

impl std::error::Error for SetupError {}

impl From<DeviceError> for SetupError {
    fn from(e: DeviceError) -> Self {
        SetupError::Device(e)
    }
}

/// An IP address as the tables hold it (IPv4-mapped for IPv4).
pub fn ip16(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

impl NicSetup {
    /// Maps the setup's memory ranges into simulated host memory.
    pub fn map_memory(&self, mem: &mut SimMemory) -> Result<(), SetupError> {
        for m in &self.memory {
            if !mem.map_at(m.addr, m.len as usize) {
                return Err(SetupError::Invalid(format!(
                    "memory at {:#x}+{} overlaps another range",
                    m.addr, m.len
                )));
            }
        }
        Ok(())
    }

    /// Programs registers and tables through the driver.
    pub fn apply<N: Nic>(&self, dev: &mut Device<N>) -> Result<(), SetupError> {
        let mac: EthernetAddress = self
            .mac
            .parse()
            .map_err(|e| SetupError::Invalid(format!("mac: {e}")))?;
        dev.set_mac(mac);
        if let Some(n) = self.ack_coalesce {
            dev.set_ack_coalesce(n);
        }
        for r in &self.regions {
            let mut access = 0;
            for a in &r.access {
                access |= match a.as_str() {
                    "remote_write" => tables::ACCESS_REMOTE_WRITE,
                    "remote_read" => tables::ACCESS_REMOTE_READ,
                    "local_write" => tables::ACCESS_LOCAL_WRITE,
                    other => return Err(SetupError::Invalid(format!("access right {other:?}"))),
                };
            }
            let entry = RegionEntry {
                valid: true,
                key: r.key,
                access,
                base: r.base,
                length: r.length,
            };
            dev.set_region(r.index, &entry)?;
        }
        for c in &self.connections {
            let ipv6 = c.peer_ip.is_ipv6();
            if c.local_ip.is_ipv6() != ipv6 {
                return Err(SetupError::Invalid(format!(
                    "connection {}: mixed IP versions",
                    c.id
                )));
            }
            let entry = ConnectionEntry {
                valid: true,
                ipv6,
                vlan_tci: c.vlan_tci,
                dscp: c.dscp,
                peer_conn: c.peer_conn,
                flow_base: c.flow_base,
                flow_count: c.flow_count,
                tag_base: c.tag_base,
                tag_count: c.tag_count,
                peer_mac: c
                    .peer_mac
                    .parse()
                    .map_err(|e| SetupError::Invalid(format!("peer_mac: {e}")))?,
                local_ip: ip16(c.local_ip),
                peer_ip: ip16(c.peer_ip),
                rate_hint_mbps: c.rate_hint_mbps,
            };
            dev.set_connection(c.id, &entry)?;
            for f in 0..c.flow_count as u32 {
                dev.init_flow(c.flow_base as u32 + f, c.initial_fsn)?;
            }
            for t in 0..c.tag_count as u32 {
                dev.reset_tag(c.tag_base as u32 + t)?;
            }
        }
        for r in &self.recv_buffers {
            dev.post_recv(r.tag_ctx, r.ssn, r.addr, r.len)?;
        }
        Ok(())
    }
}
