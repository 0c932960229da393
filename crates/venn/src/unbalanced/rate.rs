//! How many OPRF evaluations each client gets: a token bucket per client, `burst`
//! evaluations at most at once, refilled at `per_day` a day. Without the key no item can be
//! tested offline, so every guess costs an evaluation, and this is what bounds them (a
//! query's padding counts like its items). A request the bucket cannot ever hold is
//! refused as too large; one it cannot hold yet is told when it could.

use super::oprf_round::Refusal;
use std::collections::HashMap;
use std::hash::Hash;
use std::time::Instant;

/// Seconds in a day.
const DAY: f64 = 86_400.0;

/// Each client's bucket.
#[derive(Debug)]
pub struct RateLimiter<K> {
    burst: u64,
    per_second: f64,
    buckets: HashMap<K, Bucket>,
}

/// A client's evaluations left, as of `at`.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    /// Buckets of `burst` evaluations refilled at `per_day` a day (both at least one).
    pub fn new(burst: u64, per_day: u64) -> RateLimiter<K> {
        RateLimiter {
            burst: burst.max(1),
            per_second: per_day.max(1) as f64 / DAY,
            buckets: HashMap::new(),
        }
    }

    /// The bucket of `client` at `now`: refilled since it was last used, a new client's
    /// full.
    fn level(&self, client: &K, now: Instant) -> f64 {
        let burst = self.burst as f64;
        self.buckets.get(client).map_or(burst, |b| {
            let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
            (b.tokens + elapsed * self.per_second).min(burst)
        })
    }

    /// Takes `n` evaluations from `client`'s bucket at `now`, or refuses: more than a
    /// bucket holds, or more than it holds yet (with the seconds until it will).
    pub fn take(&mut self, client: &K, n: u64, now: Instant) -> Result<(), Refusal> {
        if n > self.burst {
            return Err(Refusal::TooManyItems {
                max: u32::try_from(self.burst).unwrap_or(u32::MAX),
            });
        }
        let tokens = self.level(client, now);
        let missing = n as f64 - tokens;
        if missing > 0.0 {
            return Err(Refusal::RateLimited {
                retry_after: (missing / self.per_second).ceil() as u64,
            });
        }
        let left = Bucket {
            tokens: tokens - n as f64,
            at: now,
        };
        self.buckets.insert(client.clone(), left);
        Ok(())
    }

    /// Forgets the clients whose buckets are full again at `now` (as a new client's):
    /// what the limiter holds stays bounded by the clients active within a refill.
    pub fn prune(&mut self, now: Instant) {
        let (burst, per_second) = (self.burst as f64, self.per_second);
        self.buckets.retain(|_, b| {
            let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
            b.tokens + elapsed * per_second < burst
        });
    }

    /// How many clients it holds a bucket for.
    pub fn clients(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A client spends its burst, is told when to come back, is answered then; another
    /// client is not affected; a request above the burst is too large; full buckets are
    /// forgotten.
    #[test]
    fn buckets_limit_each_client_and_refill() {
        // 4,096 at once, 8,640 a day: one every 10 s.
        let mut limiter = RateLimiter::new(4096, 8640);
        let t0 = Instant::now();
        assert!(limiter.take(&"a", 4000, t0).is_ok());
        assert_eq!(
            limiter.take(&"a", 100, t0),
            Err(Refusal::RateLimited { retry_after: 40 })
        );
        assert!(
            limiter.take(&"b", 4096, t0).is_ok(),
            "each client its own bucket"
        );
        let later = t0 + Duration::from_secs(40);
        assert!(limiter.take(&"a", 100, later).is_ok());
        assert_eq!(
            limiter.take(&"a", 4097, later),
            Err(Refusal::TooManyItems { max: 4096 })
        );
        assert_eq!(limiter.clients(), 2);
        limiter.prune(later + Duration::from_secs(10 * 4096));
        assert_eq!(limiter.clients(), 0, "full again: forgotten");
        assert!(limiter
            .take(&"a", 4096, later + Duration::from_secs(10 * 4096))
            .is_ok());
    }
}
