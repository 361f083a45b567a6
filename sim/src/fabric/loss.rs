//! Loss injection on a link: independent (Bernoulli) drops, bursty drops from a two-state
//! Gilbert-Elliott chain, and which packets a model applies to (all, or control packets only
//! for ACK loss). Each lossy link owns its own generator, seeded from the fabric seed and the
//! link's index, so one link's drops do not depend on the traffic of another.

use crate::rng::Rng;

/// A loss process.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LossModel {
    /// No loss.
    #[default]
    None,
    /// Each packet is lost with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Gilbert-Elliott: a good and a bad state with their own loss probabilities; the chain
    /// moves good→bad with `p_gb` and bad→good with `p_bg` per packet.
    GilbertElliott {
        /// Good→bad transition probability per packet.
        p_gb: f64,
        /// Bad→good transition probability per packet (mean burst = 1/p_bg packets).
        p_bg: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

impl LossModel {
    /// A Gilbert-Elliott chain with mean loss rate `p` in bursts of `burst` packets on average
    /// (every packet in the bad state is lost, none in the good one).
    pub fn bursty(p: f64, burst: f64) -> LossModel {
        if p <= 0.0 {
            return LossModel::None;
        }
        let p_bg = 1.0 / burst.max(1.0);
        // Stationary bad-state share pi_b = p_gb / (p_gb + p_bg) must equal p.
        let p_gb = (p * p_bg / (1.0 - p).max(1e-9)).min(1.0);
        LossModel::GilbertElliott {
            p_gb,
            p_bg,
            loss_good: 0.0,
            loss_bad: 1.0,
        }
    }

    /// Long-run loss probability.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                let pb = if p_gb + p_bg > 0.0 {
                    p_gb / (p_gb + p_bg)
                } else {
                    0.0
                };
                pb * loss_bad + (1.0 - pb) * loss_good
            }
        }
    }
}

/// Which packets a loss model drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LossScope {
    /// Every packet.
    #[default]
    All,
    /// Only control packets (ACKs, NAKs, CNPs, CM).
    ControlOnly,
}

/// A loss model with its state on one link.
// The model first: whether there is one is read for every packet, next to the link's other
// fields (see `Link`).
#[derive(Debug, Clone)]
#[repr(C)]
pub struct LossState {
    model: LossModel,
    scope: LossScope,
    bad: bool,
    rng: Rng,
}

impl LossState {
    /// A loss process with its own generator.
    pub fn new(model: LossModel, scope: LossScope, seed: u64) -> Self {
        LossState {
            model,
            scope,
            bad: false,
            rng: Rng::new(seed),
        }
    }

    /// Whether the process drops nothing.
    pub fn is_none(&self) -> bool {
        matches!(self.model, LossModel::None)
    }

    /// Decides the fate of one packet: true = lost.
    pub fn lose(&mut self, control: bool) -> bool {
        if self.scope == LossScope::ControlOnly && !control {
            return false;
        }
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => self.rng.chance(p),
            LossModel::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => {
                let flip = if self.bad { p_bg } else { p_gb };
                if self.rng.chance(flip) {
                    self.bad = !self.bad;
                }
                self.rng.chance(if self.bad { loss_bad } else { loss_good })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bernoulli_rate() {
        let mut s = LossState::new(LossModel::Bernoulli { p: 0.05 }, LossScope::All, 3);
        let n = 200_000;
        let lost = (0..n).filter(|_| s.lose(false)).count() as f64 / n as f64;
        assert!((lost - 0.05).abs() < 0.005, "{lost}");
    }

    #[test]
    fn gilbert_elliott_rate_and_bursts() {
        let m = LossModel::bursty(0.01, 8.0);
        assert!((m.mean_loss() - 0.01).abs() < 1e-9);
        let mut s = LossState::new(m, LossScope::All, 9);
        let n = 2_000_000;
        let (mut lost, mut bursts, mut prev) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = s.lose(false);
            lost += l as u64;
            bursts += (l && !prev) as u64;
            prev = l;
        }
        let rate = lost as f64 / n as f64;
        let mean_burst = lost as f64 / bursts.max(1) as f64;
        assert!((rate - 0.01).abs() < 0.0015, "rate {rate}");
        assert!((mean_burst - 8.0).abs() < 1.0, "mean burst {mean_burst}");
    }

    #[test]
    fn control_only_spares_data() {
        let mut s = LossState::new(LossModel::Bernoulli { p: 1.0 }, LossScope::ControlOnly, 1);
        assert!(!s.lose(false));
        assert!(s.lose(true));
    }
}
