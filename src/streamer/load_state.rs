//! What textures and meshes share while they load: a failed load's back-off,
//! what held them back this frame, and the ladder that says why one is
//! coarser than its views want. One state machine for both kinds.

use super::BelowReason;

/// A load that failed, waiting to be retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Failure {
    pub(super) message: String,
    pub(super) attempts: u32,
    /// The frame from which loading may be tried again.
    pub(super) retry_at: u64,
}

/// The loading state of one texture or mesh.
#[derive(Debug, Clone, Default)]
pub(super) struct LoadState {
    /// The last failure, while it backs off (cleared by a success, or when
    /// nothing it failed on is wanted any more).
    pub(super) failure: Option<Failure>,
    /// Why this frame's work held it back (upload cap, budget, out-of-memory
    /// back-off); set by the decisions, cleared at the start of each.
    pub(super) held_back: Option<BelowReason>,
}

impl LoadState {
    /// Records a failed load at `frame`. Failures within one attempt (the
    /// other levels of the same request round) are one attempt: the wait
    /// doubles per attempt, `backoff * 2^(attempts - 1)`, up to 64 times.
    pub(super) fn fail(&mut self, message: String, frame: u64, backoff: u64) {
        match &mut self.failure {
            Some(f) if frame < f.retry_at => f.message = message,
            _ => {
                let attempts = self.failure.as_ref().map_or(0, |f| f.attempts) + 1;
                self.failure = Some(Failure {
                    message,
                    attempts,
                    retry_at: frame + backoff * (1u64 << (attempts - 1).min(6)),
                });
            }
        }
    }

    /// Whether loads wait for the back-off at `frame`.
    pub(super) fn backing_off(&self, frame: u64) -> bool {
        self.failure.as_ref().is_some_and(|f| f.retry_at > frame)
    }
}

/// The facts the why-below ladder reads, most decisive first.
#[derive(Debug, Clone)]
pub(super) struct Below<'a> {
    /// It holds what its views want (nothing is missing).
    pub(super) at_wanted: bool,
    pub(super) failure: Option<&'a Failure>,
    /// The plan itself gives it no more, and why (budget, max resolution).
    pub(super) planned_below: Option<BelowReason>,
    pub(super) held_back: Option<&'a BelowReason>,
    /// Growth is paused after an out-of-memory event.
    pub(super) paused: bool,
    /// Loads for it are in flight.
    pub(super) loading: bool,
}

/// Why something is coarser than its views want, if it is: a failure first,
/// then the plan's own limit, then what held this frame's work back, the
/// out-of-memory pause, loads in flight, and otherwise the upload cap.
pub(super) fn why_below(b: Below<'_>) -> Option<BelowReason> {
    if b.at_wanted {
        None
    } else if let Some(f) = b.failure {
        Some(BelowReason::Error(f.message.clone()))
    } else if let Some(r) = b.planned_below {
        Some(r)
    } else if let Some(r) = b.held_back {
        Some(r.clone())
    } else if b.paused {
        Some(BelowReason::OutOfMemoryBackoff)
    } else if b.loading {
        Some(BelowReason::Loading)
    } else {
        Some(BelowReason::UploadCap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_attempt_one_back_off_doubling_per_attempt() {
        let mut s = LoadState::default();
        s.fail("a".into(), 100, 10);
        assert_eq!(s.failure.as_ref().unwrap().retry_at, 110);
        // another level of the same attempt
        s.fail("b".into(), 105, 10);
        let f = s.failure.clone().unwrap();
        assert_eq!((f.attempts, f.retry_at, f.message.as_str()), (1, 110, "b"));
        assert!(s.backing_off(109) && !s.backing_off(110));
        s.fail("c".into(), 110, 10);
        assert_eq!(s.failure.as_ref().unwrap().retry_at, 130);
        for frame in [200, 400, 800, 1600, 3200, 6400, 12800] {
            s.fail("d".into(), frame, 10);
        }
        let f = s.failure.unwrap();
        assert_eq!(f.retry_at - 12800, 640, "capped at 64 times the back-off");
    }

    #[test]
    fn the_ladder_puts_failures_first_and_the_upload_cap_last() {
        let f = Failure {
            message: "gone".into(),
            attempts: 1,
            retry_at: 9,
        };
        let base = Below {
            at_wanted: false,
            failure: None,
            planned_below: None,
            held_back: None,
            paused: false,
            loading: false,
        };
        assert_eq!(
            why_below(Below {
                at_wanted: true,
                failure: Some(&f),
                ..base.clone()
            }),
            None
        );
        assert_eq!(
            why_below(Below {
                failure: Some(&f),
                planned_below: Some(BelowReason::Budget),
                ..base.clone()
            }),
            Some(BelowReason::Error("gone".into()))
        );
        let held = BelowReason::UploadCap;
        assert_eq!(
            why_below(Below {
                planned_below: Some(BelowReason::MaxResolution),
                held_back: Some(&held),
                ..base.clone()
            }),
            Some(BelowReason::MaxResolution)
        );
        assert_eq!(
            why_below(Below {
                paused: true,
                loading: true,
                ..base.clone()
            }),
            Some(BelowReason::OutOfMemoryBackoff)
        );
        assert_eq!(
            why_below(Below {
                loading: true,
                ..base.clone()
            }),
            Some(BelowReason::Loading)
        );
        assert_eq!(why_below(base), Some(BelowReason::UploadCap));
    }
}
