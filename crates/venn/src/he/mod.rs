//! BFV homomorphic encryption for Venn's protocols (kbm23's `--offline bfv`; unbalanced
//! PSI's FHE mode, `ub-fhe`), over the `fhe` crate 0.1.1 behind the checks it lacks: it
//! builds parameters below 128-bit security without a word, and panics on some it cannot
//! use ([`params`]), and on some ciphertexts a peer can send ([`wire`]). Products of
//! ciphertexts are Venn's own ([`product`]): `fhe`'s rescale is most of a query's time.

pub mod params;
pub mod polynomial;
pub mod powers;
pub mod product;
pub mod wire;

/// `fhe`'s error as Venn's.
pub(crate) fn bfv(e: fhe::Error) -> crate::Error {
    crate::Error::Params(format!("BFV: {e}"))
}
