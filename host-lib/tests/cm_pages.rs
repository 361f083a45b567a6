//! The acceptor's side of `TagModes` pages (the modes of Tags 64 and up of a request), fed
//! with frames a real requester emitted and forged variants of them: hostile page indexes are
//! dropped and counted, a request waits for missing pages, and the pages kept for pending
//! requests are bounded.

use ferroce::{CmEvent, ConnectOptions, Context, DeviceConfig, TagMode};
use ferroce_driver::{ModelNic, SimPort};
use ferroce_proto::hsi::TableSizes;
use ferroce_proto::wire::{
    CmKind, CmRepr, EthernetAddress, FrameRepr, ROCEV2_UDP_PORT, TransportRepr, parse_frame,
};

fn ctx(last: u8, f: impl FnOnce(&mut DeviceConfig)) -> Context<ModelNic> {
    let mut cfg = DeviceConfig::new(
        EthernetAddress([2, 0, 0, 0, 0, last]),
        format!("10.0.0.{last}").parse().unwrap(),
    );
    f(&mut cfg);
    Context::open(ModelNic::new(TableSizes::default()), cfg).unwrap()
}

fn cm_of(frame: &[u8]) -> CmRepr {
    match parse_frame(frame, ROCEV2_UDP_PORT).unwrap().transport {
        TransportRepr::Cm(c) => c,
        t => panic!("not a CM frame: {t:?}"),
    }
}

/// `a` requests a connection with Tags `tags` to node 2 and sends its CM messages.
fn connect_to_node_2(a: &mut Context<ModelNic>, tags: Vec<TagMode>) {
    let pd = a.alloc_pd();
    let cq = a.create_cq(16).unwrap();
    let mut o = ConnectOptions::new(
        pd,
        cq,
        cq,
        EthernetAddress([2, 0, 0, 0, 0, 2]),
        "10.0.0.2".parse().unwrap(),
    );
    o.tags = tags;
    a.connect(&o).unwrap();
    a.progress(0).unwrap();
}

/// The frame with its CM message changed by `f` (lengths and ICRC recomputed).
fn forge(frame: &[u8], f: impl FnOnce(&mut CmRepr)) -> Vec<u8> {
    let parsed = parse_frame(frame, ROCEV2_UDP_PORT).unwrap();
    let mut cm = cm_of(frame);
    f(&mut cm);
    FrameRepr {
        transport: TransportRepr::Cm(cm),
        ..parsed.repr()
    }
    .emit()
}

fn requests(c: &mut Context<ModelNic>) -> Vec<ferroce::ConnectRequest> {
    std::iter::from_fn(|| c.poll_cm())
        .map(|e| match e {
            CmEvent::ConnectRequest(r) => r,
            e => panic!("unexpected {e:?}"),
        })
        .collect()
}

#[test]
fn the_acceptor_waits_for_pages_drops_hostile_ones_and_bounds_what_it_keeps() {
    let mut a = ctx(1, |_| {});
    let mut b = ctx(2, |c| c.cm_pending_tag_sets = 4);
    b.listen(true);
    let modes: Vec<TagMode> = (0..200)
        .map(|t| {
            if t % 3 == 0 || t == 199 {
                TagMode::Ordered
            } else {
                TagMode::Unordered
            }
        })
        .collect();
    connect_to_node_2(&mut a, modes.clone());
    let frames: Vec<Vec<u8>> =
        std::iter::from_fn(|| a.nic_mut().transmit_frame().map(|f| f.bytes)).collect();
    // Pages 1, 2 and 3 (Tags 64–199), then the request (page 0 in its own tag_modes).
    let kinds: Vec<(CmKind, u16)> = frames
        .iter()
        .map(|f| cm_of(f))
        .map(|c| (c.kind, c.path_count))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (CmKind::TagModes, 1),
            (CmKind::TagModes, 2),
            (CmKind::TagModes, 3),
            (CmKind::Request, 4),
        ]
    );
    let (pages, request) = (&frames[..3], &frames[3]);
    assert!(pages.iter().all(|p| cm_of(p).page().is_ok()));
    let mut now = 1;
    let mut deliver = |b: &mut Context<ModelNic>, f: &[u8]| {
        b.nic_mut().receive_frame(0, f).unwrap();
        now += 1;
        b.progress(now).unwrap();
    };

    // Hostile page indexes: page 0 (the request's), beyond the Tag count, far beyond.
    for p in [0, 4, 0x8000, u16::MAX] {
        deliver(&mut b, &forge(&pages[0], |c| c.path_count = p));
    }
    // A page claiming zero Tags.
    deliver(&mut b, &forge(&pages[0], |c| c.tag_count = 0));
    assert_eq!(b.stats().cm_tag_pages_dropped, 5);
    assert!(requests(&mut b).is_empty());

    // The request with page 3 missing: set aside, no event.
    deliver(&mut b, &pages[0]);
    deliver(&mut b, &pages[1]);
    deliver(&mut b, request);
    assert!(requests(&mut b).is_empty());
    assert_eq!(b.stats().cm_requests_incomplete, 1);

    // A flood of pages for other (forged) connection ids: 3 more pending requests fit the
    // bound of 4, the other 7 are dropped and counted.
    for k in 0..10 {
        deliver(&mut b, &forge(&pages[0], |c| c.src_conn = 1000 + k));
    }
    assert_eq!(b.stats().cm_tag_pages_dropped, 5 + 7);

    // Pages of an earlier request of the same connection id (another initial FSN) restart
    // the set: they never complete this request.
    deliver(&mut b, &forge(&pages[2], |c| c.initial_fsn ^= 1));
    deliver(&mut b, request);
    assert!(requests(&mut b).is_empty());
    assert_eq!(b.stats().cm_requests_incomplete, 2);

    // The resend of all pages and the request: the request completes with every mode.
    for p in pages {
        deliver(&mut b, p);
    }
    deliver(&mut b, request);
    let got = requests(&mut b);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].tag_count, 200);
    assert_eq!(got[0].tags, modes);
    // Once it is a pending request, its pages and resends are not kept again.
    let dropped = b.stats().cm_tag_pages_dropped;
    for p in pages {
        deliver(&mut b, p);
    }
    deliver(&mut b, request);
    assert!(requests(&mut b).is_empty());
    assert_eq!(b.stats().cm_tag_pages_dropped, dropped);
}

/// Pending page sets expire: after `cm_retries + 1` resend intervals without a page, a set
/// no longer counts against the bound.
#[test]
fn pending_pages_expire() {
    let mut a = ctx(1, |_| {});
    let mut b = ctx(2, |c| {
        c.cm_pending_tag_sets = 1;
        c.cm_retry_ns = 1_000;
        c.cm_retries = 2;
    });
    b.listen(true);
    connect_to_node_2(&mut a, vec![TagMode::Unordered; 100]);
    let page = a.nic_mut().transmit_frame().unwrap().bytes;
    assert_eq!(cm_of(&page).kind, CmKind::TagModes);
    b.nic_mut().receive_frame(0, &page).unwrap();
    b.progress(1).unwrap();
    b.nic_mut()
        .receive_frame(0, &forge(&page, |c| c.src_conn = 77))
        .unwrap();
    b.progress(2).unwrap();
    assert_eq!(b.stats().cm_tag_pages_dropped, 1);
    // 3 intervals later the first set has expired: room again.
    b.nic_mut()
        .receive_frame(0, &forge(&page, |c| c.src_conn = 78))
        .unwrap();
    b.progress(10_000).unwrap();
    assert_eq!(b.stats().cm_tag_pages_dropped, 1);
}
