//! What the sans-IO integration tests share: a ready sender connection and the bulk Write
//! that keeps its backlog deep.

use ferroce::core::{Connection, ConnectionParams, TagMode, TransportConfig, WorkRequest, WrKind};

/// MTU of every test connection.
pub const MTU: u32 = 4096;

/// Connection `i`: 4 flows, one unordered Tag, its own FSN range, ready at time 0.
pub fn connection(i: usize, cfg: TransportConfig) -> Connection {
    let p = ConnectionParams {
        local_conn: i as u32,
        flows: 4,
        mtu: MTU,
        tag_modes: vec![TagMode::Unordered],
        tx_initial_fsn: 1000 * i as u32,
        msg_slots: 8,
        recv_depth: 16,
        entropies: (0..64).map(|e| 1000 + e).collect(),
        planes: 1,
    };
    let mut c = Connection::new(p, cfg, 0);
    c.set_ready(0);
    c
}

/// A signaled 64 KiB Write on Tag 0.
pub fn write_64k(wr_id: u64) -> WorkRequest {
    WorkRequest {
        wr_id,
        tag: 0,
        local_addr: 0,
        len: 64 * 1024,
        kind: WrKind::Write {
            remote_va: 0,
            rkey: 1,
            imm: None,
        },
        signaled: true,
        solicited: false,
    }
}
