//! Typed access to a node's attributes. A present attribute of the wrong type is an
//! error; an absent one gives the caller's default.

use super::ctx::{invalid, NResult};
use crate::proto::onnx::{AttributeProto, TensorProto};

// `AttributeProto.AttributeType` values (0 = UNDEFINED, accepted for old files).
const FLOAT: i32 = 1;
const INT: i32 = 2;
const STRING: i32 = 3;
const TENSOR: i32 = 4;
const FLOATS: i32 = 6;
const INTS: i32 = 7;

#[derive(Clone, Copy)]
pub struct Attrs<'a> {
    list: &'a [AttributeProto],
}

impl<'a> Attrs<'a> {
    pub fn new(list: &'a [AttributeProto]) -> Self {
        Attrs { list }
    }

    /// Attribute names in model order.
    pub fn names(&self) -> impl Iterator<Item = &'a str> {
        self.list.iter().map(|a| a.name())
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    fn get(&self, name: &str) -> Option<&'a AttributeProto> {
        self.list.iter().find(|a| a.name() == name)
    }

    fn typed(&self, name: &str, ty: i32, what: &str) -> NResult<Option<&'a AttributeProto>> {
        match self.get(name) {
            Some(a) if a.r#type.unwrap_or(0) == ty || a.r#type.unwrap_or(0) == 0 => Ok(Some(a)),
            Some(a) => Err(invalid(format!(
                "attribute '{name}' should be {what}, found type {}",
                a.r#type.unwrap_or(0)
            ))),
            None => Ok(None),
        }
    }

    pub fn int(&self, name: &str) -> NResult<Option<i64>> {
        Ok(self.typed(name, INT, "an int")?.map(|a| a.i()))
    }

    pub fn int_or(&self, name: &str, default: i64) -> NResult<i64> {
        Ok(self.int(name)?.unwrap_or(default))
    }

    pub fn float(&self, name: &str) -> NResult<Option<f32>> {
        Ok(self.typed(name, FLOAT, "a float")?.map(|a| a.f()))
    }

    pub fn float_or(&self, name: &str, default: f32) -> NResult<f32> {
        Ok(self.float(name)?.unwrap_or(default))
    }

    pub fn string(&self, name: &str) -> NResult<Option<String>> {
        Ok(self
            .typed(name, STRING, "a string")?
            .map(|a| String::from_utf8_lossy(a.s()).into_owned()))
    }

    pub fn string_or(&self, name: &str, default: &str) -> NResult<String> {
        Ok(self.string(name)?.unwrap_or_else(|| default.to_string()))
    }

    pub fn ints(&self, name: &str) -> NResult<Option<&'a [i64]>> {
        Ok(self
            .typed(name, INTS, "a list of ints")?
            .map(|a| a.ints.as_slice()))
    }

    pub fn floats(&self, name: &str) -> NResult<Option<&'a [f32]>> {
        Ok(self
            .typed(name, FLOATS, "a list of floats")?
            .map(|a| a.floats.as_slice()))
    }

    pub fn tensor(&self, name: &str) -> NResult<Option<&'a TensorProto>> {
        match self.typed(name, TENSOR, "a tensor")? {
            Some(a) => {
                a.t.as_ref()
                    .map(Some)
                    .ok_or_else(|| invalid(format!("attribute '{name}' holds no tensor")))
            }
            None => Ok(None),
        }
    }
}
