//! The protocols' building blocks, public for the throughput example
//! (`examples/primitives.rs`) and for study, with **no stability promise**: a product
//! reaches Venn through the crate root ([`run`](crate::run()), [`Items`](crate::Items),
//! [`RunOptions`](crate::RunOptions)), [`protocols`](crate::protocols),
//! [`session`](crate::session) and [`net`](crate::net). Inside the crate they are
//! reached as `crate::okvs` and so on.
#[path = "gmw/mod.rs"]
pub mod gmw;
#[path = "okvs/mod.rs"]
pub mod okvs;
#[path = "ot/mod.rs"]
pub mod ot;
#[path = "tables/mod.rs"]
pub mod tables;
#[path = "vole/mod.rs"]
pub mod vole;
