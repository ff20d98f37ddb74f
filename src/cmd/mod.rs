pub mod asm;
pub mod common;
pub mod disasm;
pub mod eval;
pub mod inspect;
