//! Serde models of the files the original implementation reads and writes:
//! carton.toml, tensor_data/index.toml, string tensor files and LINKS.
//!
//! They require exactly what the original's structs require: a plain field
//! must be present, an `Option` may be missing, a `Vec` must be present
//! (serde gives it no default), and unknown keys are ignored (no
//! `deny_unknown_fields`). Parsed with the toml 0.5 crate, as the original
//! does, a file these reject is a file the original rejects.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// carton.toml. Field order is the order the original serializes them in.
#[derive(Debug, Serialize, Deserialize)]
pub struct CartonToml {
    pub spec_version: u64,
    pub model_name: Option<String>,
    pub short_description: Option<String>,
    pub model_description: Option<String>,
    pub license: Option<String>,
    pub repository: Option<String>,
    pub homepage: Option<String>,
    pub required_platforms: Option<Vec<Triple>>,
    pub input: Option<Vec<TensorSpec>>,
    pub output: Option<Vec<TensorSpec>>,
    pub self_test: Option<Vec<SelfTest>>,
    pub example: Option<Vec<Example>>,
    pub runner: RunnerInfo,
}

/// A target triple: a string that target-lexicon parses.
#[derive(Debug)]
pub struct Triple(pub target_lexicon::Triple);

impl Serialize for Triple {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_string())
    }
}

impl<'de> Deserialize<'de> for Triple {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        target_lexicon::Triple::from_str(&text)
            .map(Triple)
            .map_err(|_| de::Error::custom(format!("invalid target triple {text:?}")))
    }
}

/// `[runner]`: every field but `opts` is required, the compat version too.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunnerInfo {
    pub runner_name: String,
    pub required_framework_version: semver::VersionReq,
    pub runner_compat_version: u64,
    pub opts: Option<HashMap<String, RunnerOpt>>,
}

/// A runner option: the first of these types the value fits.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RunnerOpt {
    Integer(i64),
    Double(f64),
    String(String),
    Boolean(bool),
}

#[derive(Debug, Serialize, Deserialize)]
pub struct SelfTest {
    pub name: Option<String>,
    pub description: Option<String>,
    pub inputs: HashMap<String, TensorReference>,
    pub expected_out: Option<HashMap<String, TensorReference>>,
}

/// `[[example]]`: both `inputs` and `sample_out` are required.
#[derive(Debug, Serialize, Deserialize)]
pub struct Example {
    pub name: Option<String>,
    pub description: Option<String>,
    pub inputs: HashMap<String, TensorOrMiscReference>,
    pub sample_out: HashMap<String, TensorOrMiscReference>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TensorOrMiscReference {
    T(TensorReference),
    M(MiscFileReference),
}

pub const TENSOR_PREFIX: &str = "@tensor_data/";
pub const MISC_PREFIX: &str = "@misc/";

/// A string that must start with a given prefix.
struct PrefixedVisitor<T> {
    prefix: &'static str,
    make: fn(String) -> T,
    _marker: PhantomData<T>,
}

impl<'de, T> Visitor<'de> for PrefixedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a string starting with {}", self.prefix)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        if v.starts_with(self.prefix) {
            Ok((self.make)(v.to_owned()))
        } else {
            Err(E::custom(format!(
                "{v:?} does not start with {}",
                self.prefix
            )))
        }
    }
}

/// `@tensor_data/NAME`.
#[derive(Debug, Clone)]
pub struct TensorReference(pub String);

impl Serialize for TensorReference {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TensorReference {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_string(PrefixedVisitor {
            prefix: TENSOR_PREFIX,
            make: TensorReference,
            _marker: PhantomData,
        })
    }
}

/// `@misc/PATH`.
#[derive(Debug, Clone)]
pub struct MiscFileReference(pub String);

impl Serialize for MiscFileReference {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for MiscFileReference {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_string(PrefixedVisitor {
            prefix: MISC_PREFIX,
            make: MiscFileReference,
            _marker: PhantomData,
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: DataType,
    pub shape: Shape,
    pub description: Option<String>,
    pub internal_name: Option<String>,
}

/// The dtypes of carton.toml, spelled in lowercase.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataType {
    Float32,
    Float64,
    String,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
}

/// `"*"`, a symbol, or a list of dimensions (`[]` is a scalar).
#[derive(Debug)]
pub enum Shape {
    Any,
    Symbol(String),
    Dims(Vec<Dimension>),
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a list of dimensions")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Shape, E> {
        Ok(if v == "*" {
            Shape::Any
        } else {
            Shape::Symbol(v.to_owned())
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        let mut dims = Vec::new();
        while let Some(d) = seq.next_element()? {
            dims.push(d);
        }
        Ok(Shape::Dims(dims))
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeVisitor)
    }
}

impl Serialize for Shape {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Shape::Any => s.serialize_str("*"),
            Shape::Symbol(v) => s.serialize_str(v),
            Shape::Dims(v) => v.serialize(s),
        }
    }
}

/// A non-negative integer, a symbol, or `"*"`. Integers reach the visitor
/// as i64 (TOML has no other integer type).
#[derive(Debug)]
pub enum Dimension {
    Value(u64),
    Symbol(String),
    Any,
}

struct DimensionVisitor;

impl<'de> Visitor<'de> for DimensionVisitor {
    type Value = Dimension;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or a non-negative integer")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dimension, E> {
        u64::try_from(v)
            .map(Dimension::Value)
            .map_err(|_| E::custom(format!("negative dimension {v}")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Dimension, E> {
        Ok(if v == "*" {
            Dimension::Any
        } else {
            Dimension::Symbol(v.to_owned())
        })
    }
}

impl<'de> Deserialize<'de> for Dimension {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DimensionVisitor)
    }
}

impl Serialize for Dimension {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Dimension::Value(v) => s.serialize_u64(*v),
            Dimension::Symbol(v) => s.serialize_str(v),
            Dimension::Any => s.serialize_str("*"),
        }
    }
}

/// tensor_data/index.toml: `tensor` is required (`tensor = []` when empty).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct IndexToml {
    pub tensor: Vec<TensorInfo>,
}

/// One index entry. `shape` and `file` may be missing (nested tensors have
/// neither); `inner` is required on every entry, empty unless nested.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: String,
    pub shape: Option<Vec<u64>>,
    pub file: Option<String>,
    pub inner: Vec<String>,
}

/// A string tensor's file: `data = [...]`, C order.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct StringsToml {
    pub data: Vec<String>,
}

/// LINKS: sha256 -> urls.
#[derive(Debug, Serialize, Deserialize)]
pub struct Links {
    pub version: u64,
    pub urls: HashMap<String, Vec<String>>,
}

/// Bytes per element of a numeric index dtype; None for "string", "nested"
/// and names the original does not know.
pub fn numeric_size(dtype: &str) -> Option<usize> {
    Some(match dtype {
        "float32" | "int32" | "uint32" => 4,
        "float64" | "int64" | "uint64" => 8,
        "int8" | "uint8" => 1,
        "int16" | "uint16" => 2,
        _ => return None,
    })
}
