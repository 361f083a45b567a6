//! Invalid use of the API gives typed errors, never a panic. One context over the model NIC;
//! no link is needed for these.

use ferroce::{
    Access, ConnectOptions, Context, DeviceConfig, Error, PathOptions, RecvRequest, SendRequest,
    Sge, TagMode, WriteRequest,
};
use ferroce_driver::ModelNic;
use ferroce_proto::hsi::TableSizes;
use ferroce_proto::wire::EthernetAddress;

fn ctx() -> Context<ModelNic> {
    Context::open(
        ModelNic::new(TableSizes::default()),
        DeviceConfig::new(
            EthernetAddress([2, 0, 0, 0, 0, 1]),
            "10.0.0.1".parse().unwrap(),
        ),
    )
    .unwrap()
}

fn peer() -> (EthernetAddress, std::net::IpAddr) {
    (
        EthernetAddress([2, 0, 0, 0, 0, 2]),
        "10.0.0.2".parse().unwrap(),
    )
}

#[test]
fn regions_check_keys_bounds_and_rights() {
    let mut c = ctx();
    let pd = c.alloc_pd();
    assert_eq!(
        c.reg_mr(pd, 0, Access::NONE),
        Err(Error::InvalidArgument("region length"))
    );
    let mr = c.reg_mr(pd, 4096, Access::REMOTE_WRITE).unwrap();
    assert_ne!(mr.rkey(), 0);
    assert!(c.write_mr(&mr, 4000, &[1; 96]).is_ok());
    assert!(matches!(
        c.write_mr(&mr, 4000, &[1; 97]),
        Err(Error::LocalRangeOutOfBounds { .. })
    ));
    assert!(matches!(
        c.read_mr(&mr, u64::MAX, &mut [0; 2]),
        Err(Error::LocalRangeOutOfBounds { .. })
    ));
    let mut b = [0u8; 96];
    c.read_mr(&mr, 4000, &mut b).unwrap();
    assert_eq!(b, [1; 96]);
    // In place, the same bytes and the same bounds.
    let mut seen = Vec::new();
    c.inspect_mr(&mr, 3999, 97, &mut |bytes| seen.extend_from_slice(bytes))
        .unwrap();
    assert_eq!(seen[0], 0);
    assert_eq!(seen[1..], [1; 96]);
    assert!(matches!(
        c.inspect_mr(&mr, 4000, 97, &mut |_| panic!("out of bounds")),
        Err(Error::LocalRangeOutOfBounds { .. })
    ));
    // The PD is in use.
    assert_eq!(c.dealloc_pd(pd), Err(Error::Busy));
    c.dereg_mr(&mr).unwrap();
    assert_eq!(c.dereg_mr(&mr), Err(Error::InvalidLkey(mr.lkey())));
    assert_eq!(c.write_mr(&mr, 0, &[1]), Err(Error::InvalidLkey(mr.lkey())));
    // Re-registering the slot gives a new key: the old rkey stays dead.
    let mr2 = c.reg_mr(pd, 4096, Access::REMOTE_WRITE).unwrap();
    assert_ne!(mr2.rkey(), mr.rkey());
    c.dereg_mr(&mr2).unwrap();
    c.dealloc_pd(pd).unwrap();
    assert_eq!(c.reg_mr(pd, 64, Access::NONE), Err(Error::InvalidHandle));
}

#[test]
fn connect_refuses_bad_shapes() {
    let mut c = ctx();
    let pd = c.alloc_pd();
    let cq = c.create_cq(16).unwrap();
    assert_eq!(c.create_cq(0), Err(Error::InvalidArgument("CQ capacity")));
    let (mac, ip) = peer();
    let base = ConnectOptions::new(pd, cq, cq, mac, ip);
    let bad = |f: &dyn Fn(&mut ConnectOptions)| {
        let mut o = base.clone();
        f(&mut o);
        o
    };
    assert!(matches!(
        c.connect(&bad(&|o| o.tags = vec![])),
        Err(Error::InvalidArgument(_))
    ));
    // More Tags than the NIC has Tag contexts (65 was the limit before TagModes pages).
    let too_many = c.sizes().tags as usize + 1;
    assert!(matches!(
        c.connect(&bad(&|o| o.tags = vec![TagMode::Ordered; too_many])),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.connect(&bad(&|o| o.mtu = ferroce::MIN_MTU - 1)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.connect(&bad(&|o| o.mtu = 0)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.connect(&bad(&|o| o.mtu = 9000)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.connect(&bad(&|o| o.paths.count = 0)),
        Err(Error::InvalidArgument(_))
    ));
    // One-port NIC: one plane, and never zero.
    for planes in [0, 2] {
        assert!(matches!(
            c.connect(&bad(&|o| o.paths = PathOptions {
                planes,
                ..PathOptions::default()
            })),
            Err(Error::InvalidArgument(_))
        ));
    }
    assert!(matches!(
        c.connect(&bad(&|o| o.paths.entropies = vec![1, 2])),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.connect(&bad(&|o| o.peer_ip = "fd00::2".parse().unwrap())),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        c.connect(&bad(&|o| o.paths.count = 5000)),
        Err(Error::ResourcesExhausted(_))
    ));
    assert_eq!(
        c.connect(&bad(&|o| o.send_cq = ferroce_cq_from_other_context())),
        Err(Error::InvalidHandle)
    );
}

/// A CQ handle this context never issued.
fn ferroce_cq_from_other_context() -> ferroce::Cq {
    let mut c = ctx();
    for _ in 0..5 {
        c.create_cq(1).unwrap();
    }
    c.create_cq(1).unwrap()
}

#[test]
fn posting_checks_tags_keys_ranges_and_rights() {
    let mut c = ctx();
    let pd = c.alloc_pd();
    let pd2 = c.alloc_pd();
    let cq = c.create_cq(16).unwrap();
    let (mac, ip) = peer();
    let mut o = ConnectOptions::new(pd, cq, cq, mac, ip);
    o.tags = vec![TagMode::Ordered, TagMode::Unordered];
    let conn = c.connect(&o).unwrap();
    let src = c.reg_mr(pd, 8192, Access::NONE).unwrap();
    let rbuf = c.reg_mr(pd, 8192, Access::LOCAL_WRITE).unwrap();
    let foreign = c.reg_mr(pd2, 8192, Access::LOCAL_WRITE).unwrap();
    let send = |tag, sge| SendRequest {
        wr_id: 1,
        tag,
        sge,
        imm: None,
        signaled: true,
        solicited: false,
    };
    // Posting while connecting is allowed (it leaves once established).
    c.post_send(conn, &send(0, src.sge(0, 100))).unwrap();
    assert_eq!(
        c.post_send(conn, &send(2, src.sge(0, 100))),
        Err(Error::InvalidTag(2))
    );
    assert!(matches!(
        c.post_send(conn, &send(0, src.sge(8000, 500))),
        Err(Error::LocalRangeOutOfBounds { .. })
    ));
    assert!(matches!(
        c.post_send(
            conn,
            &send(
                0,
                Sge {
                    addr: src.addr() - 1,
                    len: 4,
                    lkey: src.lkey()
                }
            )
        ),
        Err(Error::LocalRangeOutOfBounds { .. })
    ));
    assert_eq!(
        c.post_send(
            conn,
            &send(
                0,
                Sge {
                    lkey: 0x77,
                    ..src.sge(0, 4)
                }
            )
        ),
        Err(Error::InvalidLkey(0x77))
    );
    // A region of another protection domain is not usable on this connection.
    assert_eq!(
        c.post_send(conn, &send(0, foreign.sge(0, 4))),
        Err(Error::InvalidLkey(foreign.lkey()))
    );
    let write = WriteRequest {
        wr_id: 2,
        tag: 1,
        sge: src.sge(0, 64),
        remote_addr: u64::MAX - 10,
        rkey: 0x105,
        imm: None,
        signaled: true,
    };
    assert!(matches!(
        c.post_write(conn, &write),
        Err(Error::InvalidArgument(_))
    ));
    // Receive buffers need local write.
    let recv = |sge| RecvRequest {
        wr_id: 3,
        tag: 1,
        sge,
    };
    assert_eq!(
        c.post_recv(conn, &recv(src.sge(0, 64))),
        Err(Error::AccessDenied)
    );
    for _ in 0..16 {
        c.post_recv(conn, &recv(rbuf.sge(0, 64))).unwrap();
    }
    assert_eq!(
        c.post_recv(conn, &recv(rbuf.sge(0, 64))),
        Err(Error::RecvQueueFull)
    );
    // A destroyed connection is an unknown handle.
    c.destroy_connection(conn).unwrap();
    assert_eq!(
        c.post_send(conn, &send(0, src.sge(0, 4))),
        Err(Error::InvalidHandle)
    );
    assert_eq!(c.fence(conn), Err(Error::InvalidHandle));
    assert_eq!(c.destroy_connection(conn), Err(Error::InvalidHandle));
    // Destroying flushed the queued Send and the posted receives to the CQ.
    let mut wcs = vec![];
    let n = match c.poll_cq(cq, 100, &mut wcs) {
        Ok(n) => n,
        Err(Error::CqOverflow) => c.poll_cq(cq, 100, &mut wcs).unwrap(),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(n, 17);
    assert!(wcs.iter().all(|w| w.status == ferroce::WcStatus::Flushed));
}

#[test]
fn an_unanswered_connect_times_out_with_an_event() {
    let mut cfg = DeviceConfig::new(
        EthernetAddress([2, 0, 0, 0, 0, 1]),
        "10.0.0.1".parse().unwrap(),
    );
    cfg.cm_retries = 3;
    cfg.cm_retry_ns = 10_000;
    let mut c = Context::open(ModelNic::new(TableSizes::default()), cfg).unwrap();
    let pd = c.alloc_pd();
    let cq = c.create_cq(4).unwrap();
    let (mac, ip) = peer();
    let conn = c
        .connect(&ConnectOptions::new(pd, cq, cq, mac, ip))
        .unwrap();
    let mut now = 0;
    let mut ev = None;
    for _ in 0..1000 {
        let next = c.progress(now).unwrap();
        while let Some(e) = c.nic_mut_frames_drained() {
            let _ = e;
        }
        if let Some(e) = c.poll_cm() {
            ev = Some(e);
            break;
        }
        now = next.unwrap_or(now + 1000).max(now + 1);
    }
    assert_eq!(
        ev,
        Some(ferroce::CmEvent::Failed(
            conn,
            ferroce::FailReason::ConnectTimeout
        ))
    );
    assert!((30_000..100_000).contains(&now), "gave up at {now}");
}

/// Drains the frames the model NIC emitted (nobody is listening).
trait Drain {
    fn nic_mut_frames_drained(&mut self) -> Option<Vec<u8>>;
}

impl Drain for Context<ModelNic> {
    fn nic_mut_frames_drained(&mut self) -> Option<Vec<u8>> {
        use ferroce_driver::SimPort;
        self.nic_mut().transmit_frame().map(|f| f.bytes)
    }
}

#[test]
fn a_full_event_ring_is_reported_not_silent() {
    use ferroce_driver::SimPort;
    let mut a = ctx();
    let mut b = Context::open(
        ModelNic::new(TableSizes::default()),
        DeviceConfig::new(
            EthernetAddress([2, 0, 0, 0, 0, 2]),
            "10.0.0.2".parse().unwrap(),
        ),
    )
    .unwrap();
    b.listen(true);
    let pd = a.alloc_pd();
    let cq = a.create_cq(4).unwrap();
    a.connect(&ConnectOptions::new(
        pd,
        cq,
        cq,
        EthernetAddress([2, 0, 0, 0, 0, 2]),
        "10.0.0.2".parse().unwrap(),
    ))
    .unwrap();
    a.progress(0).unwrap();
    let request = a.nic_mut().transmit_frame().expect("the CM request").bytes;
    // 5000 events without the host polling: the 4096-entry ring overflows.
    for _ in 0..5000 {
        b.nic_mut().receive_frame(0, &request).unwrap();
    }
    assert_eq!(b.progress(1), Err(Error::EventsLost(5000 - 4096)));
    assert_eq!(b.stats().events_lost, 5000 - 4096);
    // Reported once; the next call goes on normally.
    assert!(b.progress(10_000).is_ok());
    // The request itself still got through (deduplicated to one).
    let reqs = std::iter::from_fn(|| b.poll_cm()).count();
    assert_eq!(reqs, 1);
}
