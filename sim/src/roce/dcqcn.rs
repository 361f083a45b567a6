//! DCQCN's reaction point (Zhu et al., SIGCOMM 2015) with the parameters of the HPCC ns-3
//! model: α updated every 50 µs, at most one rate decrease per 50 µs, rate-increase timer
//! 55 µs, byte counter 10 MB, g = 1/256, fast recovery F = 5, additive increase 5 Mb/s,
//! hyper increase 50 Mb/s, minimum rate 100 Mb/s.

use crate::fabric::event::{PS_PER_NS, Ps};

/// DCQCN parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DcqcnConfig {
    /// α update period.
    pub alpha_period: Ps,
    /// Smallest interval between two rate decreases.
    pub decrease_interval: Ps,
    /// Rate-increase timer.
    pub increase_period: Ps,
    /// Byte counter (bytes sent per increase event).
    pub byte_counter: u64,
    /// Gain of the α average.
    pub g: f64,
    /// Fast-recovery stages.
    pub fast_recovery: u32,
    /// Additive increase (Mb/s).
    pub rai_mbps: f64,
    /// Hyper increase (Mb/s).
    pub rhai_mbps: f64,
    /// Lowest rate (Mb/s).
    pub min_mbps: f64,
}

impl Default for DcqcnConfig {
    fn default() -> Self {
        DcqcnConfig {
            alpha_period: 50_000 * PS_PER_NS,
            decrease_interval: 50_000 * PS_PER_NS,
            increase_period: 55_000 * PS_PER_NS,
            byte_counter: 10 << 20,
            g: 1.0 / 256.0,
            fast_recovery: 5,
            rai_mbps: 5.0,
            rhai_mbps: 50.0,
            min_mbps: 100.0,
        }
    }
}

/// One QP's rate limiter.
#[derive(Debug, Clone)]
pub struct Dcqcn {
    cfg: DcqcnConfig,
    line: f64,
    /// Current rate (Mb/s).
    rc: f64,
    /// Target rate (Mb/s).
    rt: f64,
    alpha: f64,
    cnp_in_period: bool,
    last_decrease: Option<Ps>,
    next_alpha: Ps,
    next_increase: Ps,
    t_stage: u32,
    bc_stage: u32,
    bytes: u64,
    /// CNPs received.
    pub cnps: u64,
    /// Rate decreases.
    pub decreases: u64,
}

impl Dcqcn {
    /// At line rate `line_mbps`.
    pub fn new(cfg: DcqcnConfig, line_mbps: f64) -> Self {
        Dcqcn {
            cfg,
            line: line_mbps,
            rc: line_mbps,
            rt: line_mbps,
            alpha: 1.0,
            cnp_in_period: false,
            last_decrease: None,
            next_alpha: 0,
            next_increase: 0,
            t_stage: 0,
            bc_stage: 0,
            bytes: 0,
            cnps: 0,
            decreases: 0,
        }
    }

    /// Current rate (Mb/s).
    pub fn rate_mbps(&self) -> f64 {
        self.rc
    }

    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Whether timers still matter (the rate is below line rate).
    pub fn active(&self) -> bool {
        self.rc < self.line
    }

    /// Next timer due, if active.
    pub fn next_timer(&self) -> Option<Ps> {
        self.active()
            .then(|| self.next_alpha.min(self.next_increase))
    }

    /// A CNP arrived.
    pub fn on_cnp(&mut self, now: Ps) {
        self.cnps += 1;
        self.cnp_in_period = true;
        if self
            .last_decrease
            .is_some_and(|t| now < t + self.cfg.decrease_interval)
        {
            return;
        }
        if !self.active() {
            // Timers start with the first decrease.
            self.next_alpha = now + self.cfg.alpha_period;
        }
        self.decreases += 1;
        self.last_decrease = Some(now);
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.cfg.min_mbps);
        self.alpha = (1.0 - self.cfg.g) * self.alpha + self.cfg.g;
        self.t_stage = 0;
        self.bc_stage = 0;
        self.bytes = 0;
        self.next_increase = now + self.cfg.increase_period;
    }

    /// `bytes` were sent.
    pub fn on_sent(&mut self, bytes: u32) {
        if !self.active() {
            return;
        }
        self.bytes += bytes as u64;
        if self.bytes >= self.cfg.byte_counter {
            self.bytes = 0;
            self.bc_stage += 1;
            self.increase();
        }
    }

    /// Runs the timers due at `now`.
    pub fn advance(&mut self, now: Ps) {
        while self.active() && self.next_alpha <= now {
            if !self.cnp_in_period {
                self.alpha *= 1.0 - self.cfg.g;
            }
            self.cnp_in_period = false;
            self.next_alpha += self.cfg.alpha_period;
        }
        while self.active() && self.next_increase <= now {
            self.t_stage += 1;
            self.next_increase += self.cfg.increase_period;
            self.increase();
        }
    }

    fn increase(&mut self) {
        let f = self.cfg.fast_recovery;
        if self.t_stage.max(self.bc_stage) < f {
            // Fast recovery: halve the distance to the target.
        } else if self.t_stage.min(self.bc_stage) > f {
            self.rt += self.cfg.rhai_mbps;
        } else {
            self.rt += self.cfg.rai_mbps;
        }
        self.rt = self.rt.min(self.line);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
        // Within a hair of line rate is line rate (and stops the timers).
        if self.line - self.rc < 1e-3 {
            self.rc = self.line;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Ps = 1_000_000;

    #[test]
    fn cnp_cuts_then_recovers() {
        let mut d = Dcqcn::new(DcqcnConfig::default(), 100_000.0);
        d.on_cnp(0);
        // α = 1 at first: the rate halves.
        assert!((d.rate_mbps() - 50_000.0).abs() < 1.0);
        // A second CNP within 50 us does not cut again.
        d.on_cnp(10 * US);
        assert!((d.rate_mbps() - 50_000.0).abs() < 1.0);
        // After 50 us it cuts by α/2 with α ≈ 1.
        d.on_cnp(60 * US);
        let r = d.rate_mbps();
        assert!(r < 26_000.0 && r > 24_000.0, "{r}");
        assert_eq!(d.decreases, 2);
        // Fast recovery climbs back toward the target (50 Gb/s) within five timer periods.
        d.advance(60 * US + 5 * 55 * US);
        assert!(d.rate_mbps() > 48_000.0, "{}", d.rate_mbps());
        // And α decays while no CNP comes.
        let a = d.alpha();
        d.advance(2_000 * US);
        assert!(d.alpha() < a);
        assert!(d.rate_mbps() > 50_000.0);
    }
}
