//! Two-tier leaf-spine fabrics, one per plane. Host `h` has one NIC port per plane; port `p`
//! connects to leaf `h / hosts_per_leaf` of plane `p`. Every leaf connects to every spine of
//! its plane. Planes share nothing, so a whole plane can fail while the others carry on.

use super::event::{PS_PER_NS, Ps};
use super::port::{Link, LinkRole, Port, Red};
use super::switch::Switch;
use crate::rng::Rng;

/// Shape and parameters of the fabric.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologyConfig {
    /// Hosts.
    pub hosts: u32,
    /// Hosts per leaf switch.
    pub hosts_per_leaf: u32,
    /// Spine switches per plane.
    pub spines: u32,
    /// Planes (NIC ports per host).
    pub planes: u8,
    /// Rate of every link (Gb/s).
    pub link_gbps: f64,
    /// Propagation delay of every link (ns).
    pub link_delay_ns: u64,
    /// Output buffer of every switch port (bytes).
    pub buffer_bytes: u64,
    /// ECN marking of every switch port.
    pub red: Option<Red>,
    /// Seed (marking decisions, hash salts).
    pub seed: u64,
}

impl Default for TopologyConfig {
    fn default() -> Self {
        TopologyConfig {
            hosts: 16,
            hosts_per_leaf: 8,
            spines: 4,
            planes: 1,
            link_gbps: 100.0,
            // Host-leaf-spine-leaf-host is 4 links: 8 crossings per round trip at 1 us plus
            // serialisation make a base RTT of about 10 us.
            link_delay_ns: 1_000,
            // About one BDP at 100 Gb/s and 10 us.
            buffer_bytes: 125_000,
            red: Some(Red {
                kmin: 5_000,
                kmax: 100_000,
                pmax: 0.01,
            }),
            seed: 1,
        }
    }
}

impl TopologyConfig {
    /// Leaves per plane.
    pub fn leaves(&self) -> u32 {
        self.hosts.div_ceil(self.hosts_per_leaf.max(1))
    }
}

/// A node: a host (NIC ports) or a switch.
#[derive(Debug)]
pub struct Node {
    /// Host index or switch index.
    pub kind: NodeKind,
    /// Output ports.
    pub ports: Vec<Port>,
}

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// Host `i` (node `i`).
    Host(u32),
    /// Switch `i` of [`Network::switches`].
    Switch(u32),
}

/// The wired fabric without endpoints.
#[derive(Debug)]
pub struct Network {
    /// Nodes: hosts first (node `i` is host `i`), then switches.
    pub nodes: Vec<Node>,
    /// Links (one direction each).
    pub links: Vec<Link>,
    /// Switch forwarding state; node of switch `i` is `hosts + i`.
    pub switches: Vec<Switch>,
    /// The configuration it was built from.
    pub cfg: TopologyConfig,
}

impl Network {
    /// Builds the leaf-spine planes.
    pub fn leaf_spine(cfg: &TopologyConfig) -> Network {
        let hosts = cfg.hosts;
        let hpl = cfg.hosts_per_leaf.max(1);
        let leaves = cfg.leaves();
        // One leaf needs no spine.
        let spines = if leaves > 1 { cfg.spines.max(1) } else { 0 };
        let rate_mbps = (cfg.link_gbps * 1e3).round().max(1.0) as u64;
        let delay_ps = cfg.link_delay_ns * PS_PER_NS;
        let mut rng = Rng::new(cfg.seed ^ 0x5eed_f00d);
        let mut net = Network {
            nodes: (0..hosts)
                .map(|h| Node {
                    kind: NodeKind::Host(h),
                    ports: Vec::new(),
                })
                .collect(),
            links: Vec::new(),
            switches: Vec::new(),
            cfg: cfg.clone(),
        };
        for plane in 0..cfg.planes.max(1) {
            let leaf0 = net.switches.len() as u32;
            for _ in 0..leaves {
                net.add_switch(plane, true, hosts, rng.next_u32());
            }
            let spine0 = net.switches.len() as u32;
            for _ in 0..spines {
                net.add_switch(plane, false, hosts, rng.next_u32());
            }
            // Host ports: port `plane` of every host.
            for h in 0..hosts {
                let leaf = leaf0 + h / hpl;
                let (hp, lp) = net.cable(
                    h,
                    hosts + leaf,
                    (u64::MAX, None),
                    (cfg.buffer_bytes, cfg.red),
                    (LinkRole::HostUp, LinkRole::HostDown),
                    plane,
                    rate_mbps,
                    delay_ps,
                    &mut rng,
                );
                debug_assert_eq!(hp as u8, plane);
                net.switches[leaf as usize].routes[h as usize] = vec![lp];
            }
            // Leaf-spine links.
            for l in 0..leaves {
                let mut ups = Vec::new();
                for s in 0..spines {
                    let (lp, sp) = net.cable(
                        hosts + leaf0 + l,
                        hosts + spine0 + s,
                        (cfg.buffer_bytes, cfg.red),
                        (cfg.buffer_bytes, cfg.red),
                        (LinkRole::LeafUp, LinkRole::SpineDown),
                        plane,
                        rate_mbps,
                        delay_ps,
                        &mut rng,
                    );
                    ups.push(lp);
                    for h in (l * hpl)..((l + 1) * hpl).min(hosts) {
                        net.switches[(spine0 + s) as usize].routes[h as usize] = vec![sp];
                    }
                }
                for h in 0..hosts {
                    if h / hpl != l {
                        net.switches[(leaf0 + l) as usize].routes[h as usize] = ups.clone();
                    }
                }
            }
        }
        net
    }

    fn add_switch(&mut self, plane: u8, leaf: bool, hosts: u32, salt: u32) {
        let i = self.switches.len() as u32;
        self.switches.push(Switch {
            routes: vec![Vec::new(); hosts as usize],
            salt,
            plane,
            leaf,
        });
        self.nodes.push(Node {
            kind: NodeKind::Switch(i),
            ports: Vec::new(),
        });
    }

    /// Both directions of a cable between nodes `a` and `b`; returns the new port indices.
    #[allow(clippy::too_many_arguments)]
    fn cable(
        &mut self,
        a: u32,
        b: u32,
        a_port: (u64, Option<Red>),
        b_port: (u64, Option<Red>),
        roles: (LinkRole, LinkRole),
        plane: u8,
        rate_mbps: u64,
        delay_ps: Ps,
        rng: &mut Rng,
    ) -> (u16, u16) {
        let pa = self.nodes[a as usize].ports.len() as u16;
        let pb = self.nodes[b as usize].ports.len() as u16;
        for (from, to, to_port, (buf, red), role) in
            [(a, b, pb, a_port, roles.0), (b, a, pa, b_port, roles.1)]
        {
            let li = self.links.len();
            self.links
                .push(Link::new(to, to_port, rate_mbps, delay_ps, role, plane));
            self.nodes[from as usize]
                .ports
                .push(Port::new(li, buf, red, rng.next_u64()));
        }
        (pa, pb)
    }

    /// Links matching a predicate (by index).
    pub fn links_where(&self, f: impl Fn(&Link) -> bool) -> Vec<usize> {
        (0..self.links.len())
            .filter(|&i| f(&self.links[i]))
            .collect()
    }

    /// The link leaving host `h`'s port on `plane`.
    pub fn host_uplink(&self, h: u32, plane: u8) -> Option<usize> {
        self.nodes
            .get(h as usize)?
            .ports
            .get(plane as usize)
            .map(|p| p.link)
    }

    /// Largest queue any switch port has held (bytes).
    pub fn max_switch_queue(&self) -> u64 {
        self.nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Switch(_)))
            .flat_map(|n| n.ports.iter().map(|p| p.stats.max_bytes))
            .max()
            .unwrap_or(0)
    }

    /// Largest queue any host NIC port has held (bytes): data the host let out faster than
    /// its link drains it.
    pub fn max_nic_queue(&self) -> u64 {
        self.host_ports()
            .map(|p| p.stats.max_bytes)
            .max()
            .unwrap_or(0)
    }

    /// Wire bytes (frames, preambles and gaps) the host NIC ports sent: data, resends, ACKs
    /// and every other control frame.
    pub fn host_wire_bytes(&self) -> u64 {
        self.host_ports().map(|p| p.stats.tx_bytes).sum()
    }

    /// Every host's NIC ports.
    fn host_ports(&self) -> impl Iterator<Item = &Port> {
        self.nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Host(_)))
            .flat_map(|n| n.ports.iter())
    }

    /// Sum of the switch ports' counters: (tail drops, CE marks).
    pub fn switch_drops_marks(&self) -> (u64, u64) {
        let mut d = (0, 0);
        for n in &self.nodes {
            if matches!(n.kind, NodeKind::Switch(_)) {
                for p in &n.ports {
                    d.0 += p.stats.drops;
                    d.1 += p.stats.marks;
                }
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_spine_shape() {
        let cfg = TopologyConfig {
            hosts: 20,
            hosts_per_leaf: 8,
            spines: 4,
            planes: 2,
            ..Default::default()
        };
        let net = Network::leaf_spine(&cfg);
        // 3 leaves + 4 spines per plane.
        assert_eq!(net.switches.len(), 14);
        // Hosts: one port per plane. Links: per plane 20 host cables + 12 leaf-spine cables.
        assert!(net.nodes[..20].iter().all(|n| n.ports.len() == 2));
        assert_eq!(net.links.len(), 2 * 2 * (20 + 12));
        // Leaf 0 of plane 0 reaches host 19 (leaf 2) through all 4 spines.
        assert_eq!(net.switches[0].routes[19].len(), 4);
        assert_eq!(net.switches[0].routes[3].len(), 1);
        // Spines reach every host through one port.
        assert!(net.switches[3].routes.iter().all(|r| r.len() == 1));
    }
}
