//! Random circuits evaluated in the clear and under GMW: the engine's test.

use super::triples::tests::triple_pair;
use super::{Gmw, Shared};
use crate::crypto::{Block, Prg};
use crate::net::mem_pair;
use std::time::Duration;

/// A gate on earlier wires.
#[derive(Clone, Copy)]
enum Gate {
    Xor(usize, usize),
    And(usize, usize),
    Not(usize),
}

/// Wires `0..inputs[0]` are party 0's input, the next `inputs[1]` party 1's, then one wire
/// per gate.
#[derive(Clone)]
struct Circuit {
    inputs: [usize; 2],
    gates: Vec<Gate>,
}

impl Circuit {
    fn random(prg: &mut Prg, inputs: [usize; 2], gates: usize) -> Self {
        let mut c = Circuit {
            inputs,
            gates: Vec::new(),
        };
        for g in 0..gates {
            let wires = inputs[0] + inputs[1] + g;
            let kind = prg.below(3);
            let mut wire = || prg.below(wires as u64) as usize;
            c.gates.push(match kind {
                0 => Gate::Xor(wire(), wire()),
                1 => Gate::And(wire(), wire()),
                _ => Gate::Not(wire()),
            });
        }
        c
    }

    fn and_gates(&self) -> usize {
        let and = |g: &&Gate| matches!(g, Gate::And(..));
        self.gates.iter().filter(and).count()
    }

    /// Every wire, in the clear.
    fn eval_plain(&self, inputs: &[Shared]) -> Vec<Shared> {
        let mut w = inputs.to_vec();
        for g in &self.gates {
            let v = match *g {
                Gate::Xor(x, y) => w[x].xor(&w[y]),
                Gate::And(x, y) => w[x].and(&w[y]),
                Gate::Not(x) => w[x].not(),
            };
            w.push(v);
        }
        w
    }

    /// Every wire's share, with the ANDs of one depth in one exchange.
    fn eval_gmw(&self, gmw: &mut Gmw, inputs: Vec<Shared>) -> Vec<Shared> {
        let first = inputs.len();
        let mut depth = vec![0; first];
        for g in &self.gates {
            depth.push(match *g {
                Gate::Xor(x, y) => depth[x].max(depth[y]),
                Gate::And(x, y) => depth[x].max(depth[y]) + 1,
                Gate::Not(x) => depth[x],
            });
        }
        let mut w: Vec<Option<Shared>> = inputs.into_iter().map(Some).collect();
        w.resize(first + self.gates.len(), None);
        let get = |w: &[Option<Shared>], i: usize| w[i].clone().expect("computed");
        for level in 0..=depth.iter().copied().max().unwrap_or(0) {
            let ands: Vec<(usize, usize, usize)> = (self.gates.iter().enumerate())
                .filter_map(|(g, gate)| match *gate {
                    Gate::And(x, y) if depth[first + g] == level => Some((first + g, x, y)),
                    _ => None,
                })
                .collect();
            let operands: Vec<(Shared, Shared)> = ands
                .iter()
                .map(|&(_, x, y)| (get(&w, x), get(&w, y)))
                .collect();
            let pairs: Vec<(&Shared, &Shared)> = operands.iter().map(|(x, y)| (x, y)).collect();
            for (&(out, _, _), z) in ands.iter().zip(gmw.and(&pairs).unwrap()) {
                w[out] = Some(z);
            }
            for (g, gate) in self.gates.iter().enumerate() {
                if depth[first + g] != level {
                    continue;
                }
                w[first + g] = match *gate {
                    Gate::Xor(x, y) => Some(get(&w, x).xor(&get(&w, y))),
                    Gate::Not(x) => Some(gmw.not(&get(&w, x))),
                    Gate::And(..) => continue,
                };
            }
        }
        w.into_iter().map(|v| v.expect("every wire")).collect()
    }
}

/// Party `p`'s whole run: share the inputs, evaluate, reveal every wire.
fn party(
    p: usize,
    c: &Circuit,
    chan: &mut dyn crate::net::Channel,
    triples: super::Triples,
    input: &[Shared],
    instances: usize,
) -> (Vec<Shared>, usize) {
    let mut prg = Prg::from_seed(Block::from(10 + p as u64));
    let mut gmw = Gmw::new(chan, p == 0, triples);
    let mut shares = Vec::new();
    for owner in 0..2 {
        for _ in 0..c.inputs[owner] {
            let i = shares.len() - owner * c.inputs[0];
            shares.push(if owner == p {
                gmw.share_input(&input[i], &mut prg).unwrap()
            } else {
                gmw.peers_input(instances).unwrap()
            });
        }
    }
    let wires = c.eval_gmw(&mut gmw, shares);
    let opened = wires.iter().map(|w| gmw.reveal(w).unwrap()).collect();
    (opened, gmw.triples_left())
}

#[test]
fn random_circuits_agree_with_plaintext_evaluation() {
    let mut prg = Prg::from_seed(Block::from(5));
    for (instances, gates) in [(1usize, 60), (64, 200), (100, 300), (1000, 120)] {
        let c = Circuit::random(&mut prg, [5, 4], gates);
        let mut input = |n: usize| -> Vec<Shared> {
            (0..n)
                .map(|_| Shared::from_bools((0..instances).map(|_| prg.u64() & 1 == 1)))
                .collect()
        };
        let (in0, in1) = (input(5), input(4));
        let all: Vec<Shared> = in0.iter().chain(&in1).cloned().collect();
        let expected = c.eval_plain(&all);
        let words = c.and_gates() * instances.div_ceil(64);
        let (t0, t1) = triple_pair(words + 1);
        let (mut x, mut y) = mem_pair(Duration::from_secs(30));
        let c1 = c.clone();
        let other = std::thread::spawn(move || party(1, &c1, &mut y, t1, &in1, instances));
        let (opened, left) = party(0, &c, &mut x, t0, &in0, instances);
        assert_eq!(other.join().unwrap(), (opened.clone(), left));
        assert_eq!(opened, expected, "{instances} instances, {gates} gates");
        assert_eq!(
            left, 1,
            "one word of triples per AND gate and word of instances"
        );
    }
}

#[test]
fn running_out_of_triples_is_an_error() {
    let (t0, t1) = triple_pair(1);
    let (mut x, mut y) = mem_pair(Duration::from_secs(30));
    let other = std::thread::spawn(move || {
        let mut g = Gmw::new(&mut y, false, t1);
        let v = Shared::zeros(65);
        g.and(&[(&v, &v)]).is_err()
    });
    let mut g = Gmw::new(&mut x, true, t0);
    let v = Shared::zeros(65);
    assert!(g.and(&[(&v, &v)]).is_err());
    assert!(other.join().unwrap());
}

#[test]
fn and_all_reduces_each_group() {
    let mut prg = Prg::from_seed(Block::from(9));
    let lens = [(3usize, 70usize), (1, 5), (0, 10), (8, 64), (13, 200)];
    let plain: Vec<Vec<Shared>> = lens
        .iter()
        .map(|&(k, len)| {
            (0..k)
                .map(|_| Shared::from_bools((0..len).map(|_| !prg.u64().is_multiple_of(4))))
                .collect()
        })
        .collect();
    let expected: Vec<Option<Shared>> = plain
        .iter()
        .map(|g| g.iter().cloned().reduce(|a, b| a.and(&b)))
        .collect();
    let words: usize = lens
        .iter()
        .map(|&(k, len)| k.saturating_sub(1) * len.div_ceil(64))
        .sum();
    let (t0, t1) = triple_pair(words);
    // Party 0 holds the vectors, party 1 zeros.
    let zeros: Vec<Vec<Shared>> = plain
        .iter()
        .map(|g| g.iter().map(|v| Shared::zeros(v.len())).collect())
        .collect();
    let (mut x, mut y) = mem_pair(Duration::from_secs(30));
    let other = std::thread::spawn(move || {
        let mut g = Gmw::new(&mut y, false, t1);
        let shares = g.and_all(zeros).unwrap();
        (shares, g.triples_left())
    });
    let mut g = Gmw::new(&mut x, true, t0);
    let mine = g.and_all(plain).unwrap();
    let (theirs, left) = other.join().unwrap();
    assert_eq!(left, 0, "k − 1 ANDs a group");
    let opened: Vec<Option<Shared>> = mine
        .iter()
        .zip(&theirs)
        .map(|(a, b)| a.as_ref().map(|a| a.xor(b.as_ref().expect("both"))))
        .collect();
    assert_eq!(opened, expected);
}
