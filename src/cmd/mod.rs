pub mod asm;
pub mod compile;
pub mod disasm;
pub mod eval;
pub mod inspect;
pub mod profile;
pub mod run;
pub mod verify;
