//! DKT10 (De Cristofaro, Kim, Tsudik, "Linear-complexity private set intersection
//! protocols secure in malicious model", ASIACRYPT 2010), the random-oracle protocol that
//! RR17 (§7) compares against, over Ristretto255 with Fiat–Shamir proofs.
//!
//! With independent generators `g, g₁, g₂` and `h(x)` a hash onto the group, the receiver
//! (the paper's client) holds `c_1..c_n` with `h_i = h(c_i)`, `P = Σ h_i`:
//! 1. it sends `X = P + R·g` and, per item, `M_i = h_i + R_i·g₁`, `N_i = (P − h_i) + R_i·g₂`,
//!    with a proof of knowledge of `R, R_i` such that `X − M_i − N_i = R·g − R_i·(g₁ + g₂)`
//!    (this ties every `M_i` to the committed set);
//! 2. the sender (the server) picks `k`, sends `Z = k·g₁` and `M'_i = k·M_i` with a
//!    Chaum–Pedersen proof that one `k` is the discrete log of `Z` and of every `M'_i`,
//!    then the tags `T_j = H(k·h(s_j), h(s_j), s_j)` of its items in random order;
//! 3. the receiver computes `k·h_i = M'_i − R_i·Z` and its own tags, and outputs the
//!    items whose tag the sender sent.
//!
//! Every proof is checked (in one batch per proof: a random linear combination of all its
//! equations must vanish, which fails to catch a wrong equation with probability ≤ 2^-250),
//! and a failed check aborts with [`Error::CheatingDetected`]. Unlike the reference
//! implementation the challenges hash the whole statement (strong Fiat–Shamir) and the
//! session id.

use super::matching::{receive_matches, send_values};
use super::{
    no_offline_state, output_bits, AnyParty, Context, Output, OutputBits, OutputKind, Parameters,
    Party, ProtocolInfo, RoleInfo, Security, Sizes, TypedProtocol,
};
use crate::crypto::group::{decode_point, decode_scalar, hash_to_point, random_scalar, FiatShamir};
use crate::crypto::{Block, Prg, RandomOracle};
use crate::items::Items;
use crate::net::Channel;
use crate::session::Role;
use crate::tables::MatchTable;
use crate::{Error, Result};
use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use curve25519_dalek::ristretto::{RistrettoBasepointTable, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use curve25519_dalek::traits::{IsIdentity, VartimeMultiscalarMul};
use rayon::prelude::*;

/// DKT10 malicious-secure DH-based PSI.
pub(super) struct Dkt10;
/// The paper's server.
struct Dkt10Sender;
/// The paper's client.
struct Dkt10Receiver;

static INFO: ProtocolInfo = ProtocolInfo {
    name: "dkt10",
    paper: "De Cristofaro, Kim, Tsudik: Linear-Complexity Private Set Intersection Protocols \
            Secure in Malicious Model (ASIACRYPT 2010), ROM protocol; baseline of RR17 §7",
    security: Security::Malicious,
    leakage: "The receiver learns the intersection; the sender learns nothing. Both learn the \
              other's set size. Secure against a malicious party in the random-oracle model \
              (one-more-DH and DDH in Ristretto255); every proof is checked and a bad one aborts.",
    both_allowed: false,
    roles: &[
        RoleInfo {
            role: Role::Sender,
            security: Security::Malicious,
            output: OutputKind::Nothing,
            peer_item_bytes: 2048,
            own_item_bytes: 512,
        },
        RoleInfo {
            role: Role::Receiver,
            security: Security::Malicious,
            output: OutputKind::Indices,
            peer_item_bytes: 64,
            // Measured: 635 MiB at 2^18 items each (2048 here came to 598 with the base).
            own_item_bytes: 2560,
        },
    ],
};

/// Items per frame.
const CHUNK: usize = 1024;
const POINT: usize = 32;

struct Generators {
    g: RistrettoBasepointTable,
    g1: RistrettoBasepointTable,
    g2: RistrettoBasepointTable,
    g12: RistrettoBasepointTable,
    g1_point: RistrettoPoint,
    g12_point: RistrettoPoint,
}

/// `g` is the standard base point; `g₁, g₂` are hashed onto the group from fixed strings,
/// so nobody knows a discrete-log relation between the three.
fn generators() -> Generators {
    let g1 = hash_to_point("venn/dkt10/generator", &[b"g1"]);
    let g2 = hash_to_point("venn/dkt10/generator", &[b"g2"]);
    Generators {
        g: RistrettoBasepointTable::create(&RISTRETTO_BASEPOINT_POINT),
        g1: RistrettoBasepointTable::create(&g1),
        g2: RistrettoBasepointTable::create(&g2),
        g12: RistrettoBasepointTable::create(&(g1 + g2)),
        g1_point: g1,
        g12_point: g1 + g2,
    }
}

fn item_points(items: &Items, sid: &[u8; 32]) -> Vec<RistrettoPoint> {
    (0..items.len())
        .into_par_iter()
        .with_min_len(256)
        .map(|i| hash_to_point("venn/dkt10/item", &[sid, items.get(i)]))
        .collect()
}

/// The tag `H(k·h(x), h(x), x)` truncated to `bits`.
fn tag(
    ro: &RandomOracle,
    key: &RistrettoPoint,
    point: &RistrettoPoint,
    item: &[u8],
    bits: usize,
) -> Block {
    let d = ro.hash(&[key.compress().as_bytes(), point.compress().as_bytes(), item]);
    Block::from_le_bytes(d[..16].try_into().expect("16 bytes")) & Block::low_ones(bits)
}

fn scalars(prg: &mut Prg, n: usize) -> Vec<Scalar> {
    (0..n).map(|_| random_scalar(prg)).collect()
}

/// Sends `rows` (each `width` points, already compressed into bytes) in frames of
/// [`CHUNK`] rows.
fn send_rows(chan: &mut dyn Channel, bytes: &[u8], row_bytes: usize) -> Result<()> {
    for frame in bytes.chunks(CHUNK * row_bytes) {
        chan.send(frame)?;
    }
    Ok(())
}

/// Receives `n` rows of `row_bytes` sent by [`send_rows`], appending them to `out`.
fn recv_rows(
    chan: &mut dyn Channel,
    n: usize,
    row_bytes: usize,
    what: &str,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.reserve(n * row_bytes);
    let mut frame = Vec::new();
    for first in (0..n).step_by(CHUNK) {
        let rows = (n - first).min(CHUNK);
        chan.recv_exact_into(&mut frame, rows * row_bytes, what)?;
        out.extend_from_slice(&frame);
    }
    Ok(())
}

fn decode_points(bytes: &[u8]) -> Result<Vec<RistrettoPoint>> {
    bytes
        .par_chunks(POINT)
        .with_min_len(256)
        .map(decode_point)
        .collect()
}

/// The receiver's first message (step 1) with the secrets it needs later.
struct Blinded {
    /// `X ‖ A` with `A = d·g`, the proof's nonce commitment.
    head: Vec<u8>,
    /// `M_i ‖ N_i ‖ B_i` per item, `B_i = d_i·(g₁+g₂)`.
    rows: Vec<u8>,
    /// The points `M_i` (kept for checking the sender's proof).
    m: Vec<RistrettoPoint>,
    r_c: Scalar,
    d: Scalar,
    r_i: Vec<Scalar>,
    d_i: Vec<Scalar>,
}

/// Step 1: blinds the receiver's item points `h` and commits to the proof's nonces.
fn blind(gens: &Generators, h: &[RistrettoPoint], prg: &mut Prg) -> Blinded {
    let n = h.len();
    let total: RistrettoPoint = h.iter().sum();
    let (r_c, d) = (random_scalar(prg), random_scalar(prg));
    let (r_i, d_i) = (scalars(prg, n), scalars(prg, n));
    let x = total + &r_c * &gens.g;
    let head = [
        *x.compress().as_bytes(),
        *(&d * &gens.g).compress().as_bytes(),
    ]
    .concat();
    let (m, rows): (Vec<RistrettoPoint>, Vec<[u8; 3 * POINT]>) = (0..n)
        .into_par_iter()
        .with_min_len(64)
        .map(|i| {
            let m = h[i] + &r_i[i] * &gens.g1;
            let nn = (total - h[i]) + &r_i[i] * &gens.g2;
            let b = &d_i[i] * &gens.g12;
            let mut row = [0u8; 3 * POINT];
            for (chunk, p) in row.chunks_exact_mut(POINT).zip([m, nn, b]) {
                chunk.copy_from_slice(p.compress().as_bytes());
            }
            (m, row)
        })
        .unzip();
    let rows = rows.concat();
    Blinded {
        head,
        rows,
        m,
        r_c,
        d,
        r_i,
        d_i,
    }
}

impl Blinded {
    /// Sends the message and the Fiat–Shamir responses `φ = d + R·e`, `φ_i = d_i + R_i·e`
    /// for the challenge `e` over everything sent.
    fn send(&self, chan: &mut dyn Channel, sid: &[u8; 32]) -> Result<()> {
        let mut transcript = FiatShamir::new("venn/dkt10/receiver-proof", sid);
        transcript.append(&self.head);
        transcript.append(&self.rows);
        let e = transcript.challenge();
        chan.send(&self.head)?;
        send_rows(chan, &self.rows, 3 * POINT)?;
        chan.send((self.d + self.r_c * e).as_bytes())?;
        let phis: Vec<u8> = self
            .d_i
            .iter()
            .zip(&self.r_i)
            .flat_map(|(d, r)| (d + r * e).to_bytes())
            .collect();
        send_rows(chan, &phis, POINT)
    }
}

/// The sender's answer (step 2): `Z = k·g₁`, `M'_i = k·M_i`, and the Chaum–Pedersen
/// proof's commitments `A₂ = r·g₁`, `A₂_i = r·M_i` and response `φ₂ = r + c·k`.
struct Answer {
    /// `Z ‖ A₂`.
    head: Vec<u8>,
    /// `M'_i ‖ A₂_i` per item.
    rows: Vec<u8>,
    k: Scalar,
    r: Scalar,
}

/// Step 2 for the receiver's points (rows of `M_i, N_i, B_i`) with key `k`.
fn answer(gens: &Generators, points: &[RistrettoPoint], k: &Scalar, prg: &mut Prg) -> Answer {
    let r = random_scalar(prg);
    let head = [
        *(k * &gens.g1).compress().as_bytes(),
        *(&r * &gens.g1).compress().as_bytes(),
    ]
    .concat();
    let rows = points
        .par_chunks(3)
        .with_min_len(64)
        .flat_map_iter(|p| {
            [
                *(k * p[0]).compress().as_bytes(),
                *(r * p[0]).compress().as_bytes(),
            ]
        })
        .flatten()
        .collect();
    Answer {
        head,
        rows,
        k: *k,
        r,
    }
}

/// The sender's proof challenge: over `Z, A₂` and every `M_i, M'_i, A₂_i`.
fn sender_challenge(
    sid: &[u8; 32],
    head: &[u8],
    receiver_rows: &[u8],
    answer_rows: &[u8],
) -> Scalar {
    let mut transcript = FiatShamir::new("venn/dkt10/sender-proof", sid);
    transcript.append(head);
    for (m, ans) in receiver_rows
        .chunks(3 * POINT)
        .zip(answer_rows.chunks(2 * POINT))
    {
        transcript.append(&m[..POINT]);
        transcript.append(ans);
    }
    transcript.challenge()
}

impl Answer {
    /// Sends the answer and the proof response for the challenge over everything sent.
    fn send(&self, chan: &mut dyn Channel, sid: &[u8; 32], receiver_rows: &[u8]) -> Result<()> {
        let c = sender_challenge(sid, &self.head, receiver_rows, &self.rows);
        chan.send(&self.head)?;
        send_rows(chan, &self.rows, 2 * POINT)?;
        chan.send((self.r + c * self.k).as_bytes())
    }
}

/// Whether `Σ scalars·points` is the identity (variable time: all inputs are public).
fn vanishes(scalars: Vec<Scalar>, points: Vec<RistrettoPoint>) -> bool {
    RistrettoPoint::vartime_multiscalar_mul(scalars, points).is_identity()
}

impl TypedProtocol for Dkt10 {
    type Config = ();

    fn info(&self) -> &'static ProtocolInfo {
        &INFO
    }

    fn params(&self, sizes: Sizes, _: ()) -> Result<Box<dyn Parameters>> {
        Ok(Box::new(OutputBits(output_bits(sizes))))
    }

    fn party(&self, role: Role) -> &'static dyn AnyParty {
        match role {
            Role::Sender => &Dkt10Sender,
            Role::Receiver => &Dkt10Receiver,
        }
    }
}

impl Party for Dkt10Sender {
    no_offline_state!();

    fn online(&self, ctx: &mut Context, _: (), items: &Items) -> Result<Output> {
        let sid = ctx.session.id;
        let n_r = ctx.session.n_receiver as usize;
        let v = output_bits(ctx.session.sized);
        let gens = generators();
        ctx.phase("hash items", false);
        let h = item_points(items, &sid);

        ctx.phase("verify receiver's proof", false);
        let head = ctx
            .peer
            .recv_exact(2 * POINT, "commitment X and proof nonce")?;
        let (x, sigma_a) = (decode_point(&head[..POINT])?, decode_point(&head[POINT..])?);
        let mut rows = Vec::new();
        recv_rows(
            ctx.peer,
            n_r,
            3 * POINT,
            "receiver's blinded items",
            &mut rows,
        )?;
        let mut transcript = FiatShamir::new("venn/dkt10/receiver-proof", &sid);
        transcript.append(&head);
        transcript.append(&rows);
        let e = transcript.challenge();
        let phi = decode_scalar(&ctx.peer.recv_exact(POINT, "proof response")?)?;
        let mut phis = Vec::new();
        recv_rows(ctx.peer, n_r, POINT, "proof responses", &mut phis)?;
        let points = decode_points(&rows)?;
        let phis: Vec<Scalar> = phis
            .chunks(POINT)
            .map(decode_scalar)
            .collect::<Result<_>>()?;
        // For every i: φ·g − φ_i·(g₁+g₂) − A + B_i − e·X + e·M_i + e·N_i = 0.
        let rho = scalars(&mut ctx.prg, n_r);
        let rho_sum: Scalar = rho.iter().sum();
        let mut sc = vec![
            rho_sum * phi,
            -rho.iter().zip(&phis).map(|(r, p)| r * p).sum::<Scalar>(),
            -rho_sum,
            -(rho_sum * e),
        ];
        let mut pts = vec![RISTRETTO_BASEPOINT_POINT, gens.g12_point, sigma_a, x];
        for (r, p) in rho.iter().zip(points.chunks(3)) {
            sc.extend([*r, r * e, r * e]);
            pts.extend([p[2], p[0], p[1]]);
        }
        if !vanishes(sc, pts) {
            return Err(Error::CheatingDetected(
                "the receiver's proof that its blinded items match its committed set failed".into(),
            ));
        }

        ctx.phase("blind and prove", false);
        let k = random_scalar(&mut ctx.prg);
        let answers = answer(&gens, &points, &k, &mut ctx.prg);
        answers.send(ctx.peer, &sid, &rows)?;

        ctx.phase("send tags", false);
        let ro = RandomOracle::new("venn/dkt10/tag", &sid);
        let perm = ctx.prg.permutation(items.len());
        let tags: Vec<Block> = perm
            .par_iter()
            .with_min_len(256)
            .map(|&j| {
                let j = j as usize;
                tag(&ro, &(answers.k * h[j]), &h[j], items.get(j), v)
            })
            .collect();
        send_values(ctx.peer, items.len(), 1, v / 8, |first, out| {
            out.copy_from_slice(&tags[first..first + out.len()]);
        })?;
        Ok(Output::Nothing)
    }
}

impl Party for Dkt10Receiver {
    no_offline_state!();

    fn online(&self, ctx: &mut Context, _: (), items: &Items) -> Result<Output> {
        let sid = ctx.session.id;
        let n = items.len();
        let n_s = ctx.session.n_sender as usize;
        let v = output_bits(ctx.session.sized);
        let gens = generators();
        ctx.phase("hash items", false);
        let h = item_points(items, &sid);

        ctx.phase("blind and prove", false);
        let blinded = blind(&gens, &h, &mut ctx.prg);
        blinded.send(ctx.peer, &sid)?;
        let Blinded {
            rows,
            m: m_points,
            r_i,
            ..
        } = blinded;

        ctx.phase("verify sender's proof", false);
        let head = ctx.peer.recv_exact(2 * POINT, "sender's key commitment")?;
        let (z, a2) = (decode_point(&head[..POINT])?, decode_point(&head[POINT..])?);
        let mut answers = Vec::new();
        recv_rows(
            ctx.peer,
            n,
            2 * POINT,
            "sender's blinded answers",
            &mut answers,
        )?;
        let phi2 = decode_scalar(&ctx.peer.recv_exact(POINT, "sender's proof response")?)?;
        let c = sender_challenge(&sid, &head, &rows, &answers);
        let answer_points = decode_points(&answers)?;
        // φ₂·g₁ − A₂ − c·Z = 0 and, for every i, φ₂·M_i − A₂_i − c·M'_i = 0.
        let rho = scalars(&mut ctx.prg, n + 1);
        let mut sc = vec![rho[n] * phi2, -rho[n], -(rho[n] * c)];
        let mut pts = vec![gens.g1_point, a2, z];
        for ((r, m), ans) in rho.iter().zip(&m_points).zip(answer_points.chunks(2)) {
            sc.extend([r * phi2, -r, -(r * c)]);
            pts.extend([*m, ans[1], ans[0]]);
        }
        if !vanishes(sc, pts) {
            return Err(Error::CheatingDetected(
                "the sender's proof that it used one key for every item failed".into(),
            ));
        }

        ctx.phase("unblind and match", false);
        let ro = RandomOracle::new("venn/dkt10/tag", &sid);
        let z_table = RistrettoBasepointTable::create(&z);
        let mine: Vec<Block> = (0..n)
            .into_par_iter()
            .with_min_len(64)
            .map(|i| {
                let key = answer_points[2 * i] - &r_i[i] * &z_table;
                tag(&ro, &key, &h[i], items.get(i), v)
            })
            .collect();
        let table = MatchTable::build(n, mine.len(), |i| (mine[i], 0, i as u32));
        let matches = receive_matches(ctx.peer, n_s, 1, v / 8, &table)?;
        Ok(Output::Indices(
            matches.iter().map(|m| m.0 as usize).collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{mem_pair, MemChannel};
    use crate::session::Session;
    use std::time::Duration;

    const N: usize = 50;

    fn items(tag: &str) -> Items {
        (0..N).map(|i| format!("{tag}{i}")).collect()
    }

    fn session(role: Role) -> Session {
        Session {
            id: [9; 32],
            role,
            n_sender: N as u64,
            n_receiver: N as u64,
            sized: Sizes {
                sender: N as u64,
                receiver: N as u64,
            },
            both: false,
            options: Default::default(),
            key: [0; 32],
        }
    }

    /// Runs the honest `role` against `cheater` on the other end; returns the honest result.
    fn against<T: Send>(
        role: Role,
        cheater: impl FnOnce(&mut MemChannel) -> Result<T> + Send,
    ) -> Result<Output> {
        let (mut a, mut b) = mem_pair(Duration::from_secs(10));
        std::thread::scope(|s| {
            let t = s.spawn(move || cheater(&mut b));
            let mut ctx = Context::new(&mut a, session(role), Prg::from_seed(Block::from(1)), None);
            let result = match role {
                Role::Sender => Party::online(&Dkt10Sender, &mut ctx, (), &items("s")),
                Role::Receiver => Party::online(&Dkt10Receiver, &mut ctx, (), &items("s")),
            };
            drop(ctx);
            drop(a);
            let _ = t.join();
            result
        })
    }

    /// Reads the receiver's first message; returns its `M_i, N_i, B_i` rows.
    fn read_receiver_message(chan: &mut dyn Channel) -> Result<Vec<u8>> {
        chan.recv_exact(2 * POINT, "head")?;
        let mut rows = Vec::new();
        recv_rows(chan, N, 3 * POINT, "rows", &mut rows)?;
        chan.recv_exact(POINT, "phi")?;
        recv_rows(chan, N, POINT, "phis", &mut Vec::new())?;
        Ok(rows)
    }

    #[test]
    fn a_receiver_whose_items_do_not_match_its_commitment_is_caught() {
        let result = against(Role::Sender, |chan| {
            let gens = generators();
            let mut prg = Prg::from_seed(Block::from(2));
            let h = item_points(&items("r"), &[9; 32]);
            let mut blinded = blind(&gens, &h, &mut prg);
            // Swap in an extra item for N_0: the proof then cannot hold for row 0.
            let extra = hash_to_point("venn/dkt10/item", &[&[9; 32], b"an item not in X"]);
            let n0 = decode_point(&blinded.rows[POINT..2 * POINT]).unwrap() + extra;
            blinded.rows[POINT..2 * POINT].copy_from_slice(n0.compress().as_bytes());
            blinded.send(chan, &[9; 32])
        });
        assert!(
            matches!(result, Err(Error::CheatingDetected(ref w)) if w.contains("receiver's proof")),
            "{result:?}"
        );
    }

    #[test]
    fn a_sender_using_a_second_key_is_caught() {
        let result = against(Role::Receiver, |chan| {
            let rows = read_receiver_message(chan)?;
            let points = decode_points(&rows)?;
            let gens = generators();
            let mut prg = Prg::from_seed(Block::from(3));
            let mut ans = answer(&gens, &points, &random_scalar(&mut prg), &mut prg);
            // Item 0 is answered under another key: M'_0 = k'·M_0.
            let other = random_scalar(&mut prg) * points[0];
            ans.rows[..POINT].copy_from_slice(other.compress().as_bytes());
            ans.send(chan, &[9; 32], &rows)
        });
        assert!(
            matches!(result, Err(Error::CheatingDetected(ref w)) if w.contains("sender's proof")),
            "{result:?}"
        );
    }

    #[test]
    fn a_sender_sending_more_tags_than_its_set_size_is_refused() {
        let result = against(Role::Receiver, |chan| {
            let rows = read_receiver_message(chan)?;
            let points = decode_points(&rows)?;
            let mut prg = Prg::from_seed(Block::from(4));
            let gens = generators();
            answer(&gens, &points, &random_scalar(&mut prg), &mut prg)
                .send(chan, &[9; 32], &rows)?;
            let v = output_bits(session(Role::Sender).sized) / 8;
            chan.send(&vec![7u8; (N + 1) * v])
        });
        assert!(matches!(result, Err(Error::Protocol { .. })), "{result:?}");
    }

    #[test]
    fn malformed_points_and_scalars_are_refused() {
        let result = against(Role::Sender, |chan| {
            chan.send(&[0xEE; 2 * POINT])?;
            Ok(())
        });
        assert!(matches!(result, Err(Error::Protocol { .. })), "{result:?}");
        let result = against(Role::Sender, |chan| {
            let gens = generators();
            let blinded = blind(
                &gens,
                &item_points(&items("r"), &[9; 32]),
                &mut Prg::from_seed(Block::from(5)),
            );
            chan.send(&blinded.head)?;
            send_rows(chan, &blinded.rows, 3 * POINT)?;
            chan.send(&[0xFF; POINT])?; // not a canonical scalar
            Ok(())
        });
        assert!(
            matches!(result, Err(Error::Protocol { ref got, .. }) if got.contains("non-canonical")),
            "{result:?}"
        );
    }
}
