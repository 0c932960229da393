//! Coin tossing by commit-then-open: one party commits to a random share, the other
//! answers with its own share in the clear, the first opens. Neither can bias the result
//! (RR17 Fig. 4 step 1; the KOS15 check seed; KKRT16's code key and hash seeds).
//!
//! The commitment `H(sid, label, share)` is hiding because the share is 128 random bits,
//! and binding by collision resistance. The result hashes both shares under the session
//! id and the label, so two tosses never share a value and a toss replayed from another
//! session gives an unrelated one.
//!
//! The two steps of each side are separate calls, because some protocols must put work
//! between them (KOS15: the answer may only come after the extension's rows are fixed).

use crate::crypto::{Block, Prg, RandomOracle};
use crate::net::{Channel, Reader, Writer};
use crate::{Error, Result};

fn commitment(sid: &[u8; 32], label: &str, share: Block) -> [u8; 32] {
    RandomOracle::new("venn/coin-toss/commit", sid).hash(&[label.as_bytes(), &share.to_le_bytes()])
}

/// The tossed value: two blocks.
fn outcome(sid: &[u8; 32], label: &str, committed: Block, answered: Block) -> [Block; 2] {
    let h = RandomOracle::new("venn/coin-toss/value", sid).hash(&[
        label.as_bytes(),
        &committed.to_le_bytes(),
        &answered.to_le_bytes(),
    ]);
    let block = |b: &[u8]| Block::from_le_bytes(b.try_into().expect("16 bytes"));
    [block(&h[..16]), block(&h[16..])]
}

fn receive_share(chan: &mut dyn Channel, what: &str) -> Result<Block> {
    let msg = chan.recv_exact(16, what)?;
    Reader::new(&msg, "coin-toss share").block()
}

/// The committing side of a toss.
pub struct CoinToss {
    sid: [u8; 32],
    label: &'static str,
    share: Block,
}

impl CoinToss {
    /// Draws our share and sends the commitment to it.
    pub fn commit(
        chan: &mut dyn Channel,
        sid: &[u8; 32],
        label: &'static str,
        prg: &mut Prg,
    ) -> Result<Self> {
        let share = prg.block();
        chan.send(&commitment(sid, label, share))?;
        Ok(CoinToss {
            sid: *sid,
            label,
            share,
        })
    }

    /// Receives the peer's share, opens ours, and returns the tossed value.
    pub fn open(self, chan: &mut dyn Channel) -> Result<[Block; 2]> {
        let theirs = receive_share(chan, self.label)?;
        chan.send(&Writer::new().block(self.share).0)?;
        Ok(outcome(&self.sid, self.label, self.share, theirs))
    }
}

/// The answering side of a toss.
pub struct CoinTossReply {
    sid: [u8; 32],
    label: &'static str,
    committed: [u8; 32],
}

impl CoinTossReply {
    /// Receives the peer's commitment.
    pub fn receive(chan: &mut dyn Channel, sid: &[u8; 32], label: &'static str) -> Result<Self> {
        let msg = chan.recv_exact(32, label)?;
        Ok(CoinTossReply {
            sid: *sid,
            label,
            committed: msg.try_into().expect("32 bytes"),
        })
    }

    /// Sends our share, receives the opening and checks it against the commitment.
    pub fn answer(self, chan: &mut dyn Channel, prg: &mut Prg) -> Result<[Block; 2]> {
        let sent = self.send_share(chan, prg)?;
        sent.receive_opening(chan)
    }

    /// Sends our share ([`Self::answer`] in two steps, so that other messages can come
    /// between them).
    pub fn send_share(self, chan: &mut dyn Channel, prg: &mut Prg) -> Result<ShareSent> {
        let share = prg.block();
        chan.send(&Writer::new().block(share).0)?;
        Ok(ShareSent { reply: self, share })
    }
}

/// The answering side of a toss whose share is sent ([`CoinTossReply::send_share`]).
pub struct ShareSent {
    reply: CoinTossReply,
    share: Block,
}

impl ShareSent {
    /// Receives the opening and checks it against the commitment.
    pub fn receive_opening(self, chan: &mut dyn Channel) -> Result<[Block; 2]> {
        let CoinTossReply {
            sid,
            label,
            committed,
        } = self.reply;
        let theirs = receive_share(chan, label)?;
        if commitment(&sid, label, theirs) != committed {
            return Err(Error::CheatingDetected(format!(
                "the peer opened its {label} commitment to a different value"
            )));
        }
        Ok(outcome(&sid, label, theirs, self.share))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::mem_pair;
    use std::time::Duration;

    #[test]
    fn both_sides_get_the_same_value_and_a_changed_opening_is_caught() {
        let sid = [9; 32];
        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        let (x, y) = std::thread::scope(|s| {
            let t = s.spawn(|| {
                let reply = CoinTossReply::receive(&mut b, &sid, "test seed").unwrap();
                reply
                    .answer(&mut b, &mut Prg::from_seed(Block::from(2)))
                    .unwrap()
            });
            let toss = CoinToss::commit(
                &mut a,
                &sid,
                "test seed",
                &mut Prg::from_seed(Block::from(1)),
            );
            (toss.unwrap().open(&mut a).unwrap(), t.join().unwrap())
        });
        assert_eq!(x, y);
        assert_ne!(x[0], x[1]);

        let (mut a, mut b) = mem_pair(Duration::from_secs(5));
        let e = std::thread::scope(|s| {
            let t = s.spawn(|| {
                let reply = CoinTossReply::receive(&mut b, &sid, "test seed").unwrap();
                reply.answer(&mut b, &mut Prg::from_seed(Block::from(2)))
            });
            let toss = CoinToss::commit(
                &mut a,
                &sid,
                "test seed",
                &mut Prg::from_seed(Block::from(1)),
            );
            let mut toss = toss.unwrap();
            toss.share ^= Block::ONE;
            toss.open(&mut a).unwrap();
            t.join().unwrap().unwrap_err()
        });
        assert!(matches!(e, Error::CheatingDetected(_)), "{e}");
    }
}
