//! `config.json` (spec §2): read by serde, then checked by `validate` against the spec's rules, each
//! error naming the field and the rule it breaks. Unknown fields are ignored and null reads as absent.

use std::path::Path;

use serde::{de::DeserializeOwned, de::Error as _, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{json, Map, Value};
use serde_path_to_error::Segment;

use crate::error::{invalid, Error, Result};
use crate::exit::ExitRule;
use crate::limits::{self, Rules};

/// Query heads per KV head (spec §1): query head a reads KV head a / GROUP.
pub const GROUP: usize = 4;

/// The two kinds of attention layer (spec §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LayerKind {
    /// Sees the last `window` positions, itself included.
    Sliding,
    /// Sees every earlier position (exactly, or in O(1) memory, §6).
    Full,
}

impl LayerKind {
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Sliding => "sliding",
            LayerKind::Full => "full",
        }
    }
}

/// The O(1) full layer's settings (spec §6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct O1 {
    pub sinks: usize,
    pub window: usize,
    pub landmarks: usize,
    pub stride: usize,
    pub rect: bool,
    pub rcond: f64,
    /// By default sinks + window + stride · landmarks (filled in before reading: serde's defaults see no other field).
    pub seal_at: usize,
}

impl Default for O1 {
    fn default() -> Self {
        let (sinks, window, landmarks, stride) = (4, 512, 32, 8);
        O1 { sinks, window, landmarks, stride, rect: true, rcond: 1e-4, seal_at: sinks + window + stride * landmarks }
    }
}

impl O1 {
    /// These settings with `overrides` ("landmarks=16,rect=false", …) merged into their
    /// JSON, read again and checked like a config's `o1` section.
    pub fn with_overrides(&self, overrides: &str) -> Result<O1> {
        let Ok(Value::Object(mut map)) = serde_json::to_value(self) else { unreachable!("a struct") };
        for item in overrides.split(',').filter(|s| !s.trim().is_empty()) {
            let (key, value) =
                item.split_once('=').ok_or_else(|| invalid!("--o1: expected KEY=VALUE, got {item:?}"))?;
            let key = key.trim();
            let known = "sinks, window, landmarks, stride, rect, rcond, seal_at";
            if !map.contains_key(key) {
                return Err(invalid!("--o1: unknown setting {key:?} ({known})"));
            }
            let value = serde_json::from_str(value.trim())
                .map_err(|_| invalid!("--o1: {key}: {value:?} is not a number or true/false"))?;
            map.insert(key.into(), value);
        }
        let path = Path::new("--o1");
        let o1: O1 = read(Value::Object(map), path, "o1.")?;
        o1.validate(&Rules { path, prefix: "o1." })?;
        Ok(o1)
    }

    fn validate(&self, r: &Rules) -> Result<()> {
        for (field, n, most) in limits::o1_bounds(self) {
            r.at_most(field, n, most)?;
        }
        r.at_least("window", self.window, 1)?;
        let m = self.landmarks;
        r.check("landmarks", (1..=32).contains(&m), || format!("must be in 1…32, got {m}"))?;
        r.at_least("stride", self.stride, 1)?;
        let rcond = self.rcond;
        r.check("rcond", rcond > 0.0 && rcond < 1.0, || format!("must be in (0, 1), got {rcond}"))?;
        r.at_least("seal_at", self.seal_at, self.sinks.saturating_add(self.stride.saturating_mul(m)))
    }
}

/// A model's configuration, every default filled in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    pub layers: Vec<LayerKind>,
    pub passes: usize,
    pub window: usize,
    // These four have their defaults filled in before the config is read (`prepare`).
    pub rope_theta: f64,
    pub rope_full: bool,
    pub attn_scale: f32,
    pub eps: f32,
    /// The first id, when the config lists several.
    #[serde(default, deserialize_with = "first_token_id", skip_serializing_if = "Option::is_none")]
    pub bos_token_id: Option<u32>,
    #[serde(rename = "eos_token_id", default, deserialize_with = "token_ids", serialize_with = "one_or_many")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub eos_token_ids: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o1: Option<O1>,
    #[serde(default, skip_serializing_if = "ExitRule::is_none")]
    pub exit: ExitRule,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<crate::quant::Quantization>,
}

impl Config {
    pub fn load(path: &Path) -> Result<Config> {
        Config::parse(&limits::read_text(path, limits::MAX_CONFIG_BYTES)?, path)
    }

    /// Parses the text of a config; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let json = |msg: String| Error::Json { path: path.into(), msg };
        let value = serde_json::from_str(text).map_err(|e| json(format!("invalid JSON: {e}")))?;
        let Value::Object(mut map) = value else {
            return Err(json("expected a JSON object".into()));
        };
        let r = Rules { path, prefix: "" };
        prepare(&mut map, &r)?;
        let config: Config = read(Value::Object(map), path, "")?;
        config.validate(&r)?;
        Ok(config)
    }

    /// The rules of spec §2 that the fields' types do not already hold.
    fn validate(&self, r: &Rules) -> Result<()> {
        for (field, n, most) in limits::config_bounds(self) {
            r.at_most(field, n, most)?;
        }
        r.at_least("vocab_size", self.vocab_size, 1)?;
        for (field, n) in [("hidden", self.hidden), ("ffn", self.ffn)] {
            r.check(field, n >= 4 && n % 4 == 0, || format!("must be a multiple of 4, ≥ 4, got {n}"))?;
        }
        r.at_least("kv_heads", self.kv_heads, 1)?;
        let (h, k, d) = (self.heads, self.kv_heads, self.head_dim);
        r.check("heads", h == GROUP * k, || format!("must be 4 × kv_heads = {}, got {h}", GROUP * k))?;
        let dims = || format!("must be a multiple of 8 in 8…256, got {d}");
        r.check("head_dim", d % 8 == 0 && (8..=256).contains(&d), dims)?;
        r.check("layers", !self.layers.is_empty(), || "must be a non-empty list of \"sliding\" and \"full\"".into())?;
        r.at_least("passes", self.passes, 1)?;
        r.at_least("window", self.window, 1)?;
        let (theta, scale, eps) = (self.rope_theta, self.attn_scale, self.eps);
        r.check("rope_theta", theta > 0.0, || format!("must be > 0, got {theta}"))?;
        r.check("attn_scale", scale.is_finite(), || format!("must be a finite number, got {scale}"))?;
        r.check("eps", eps > 0.0 && eps.is_finite(), || format!("must be > 0, got {eps}"))?;
        let ids = self.bos_token_id.iter().map(|&id| ("bos_token_id", id));
        for (field, id) in ids.chain(self.eos_token_ids.iter().map(|&id| ("eos_token_id", id))) {
            let v = self.vocab_size;
            r.check(field, (id as usize) < v, || format!("token id {id} is not below vocab_size {v}"))?;
        }
        r.at_least("max_context", self.max_context.unwrap_or(1), 1)?;
        if let Some(o1) = &self.o1 {
            o1.validate(&Rules { path: r.path, prefix: "o1." })?;
        }
        let (threshold, min_passes) = (self.exit.threshold, self.exit.min_passes);
        r.check("exit.threshold", threshold >= 0.0, || format!("must be ≥ 0, got {threshold}"))?;
        r.at_least("exit.min_passes", min_passes, 1)?;
        self.quantization.as_ref().and_then(|q| q.broken(self)).map_or(Ok(()), |(f, rule)| Err(r.fails(f, rule)))
    }

    /// Widths of the fused q | k | v | gate projection, of q (and z), of k (and v).
    pub fn qkvg_width(&self) -> usize {
        2 * self.q_width() + 2 * self.kv_width()
    }
    pub fn q_width(&self) -> usize {
        self.heads * self.head_dim
    }
    pub fn kv_width(&self) -> usize {
        self.kv_heads * self.head_dim
    }

    /// Parameters of every stored tensor.
    pub fn parameters(&self) -> usize {
        let (d, v, f) = (self.hidden, self.vocab_size, self.ffn);
        let (qd, kd) = (self.q_width(), self.kv_width());
        let attn = 3 * qd * d + 2 * kd * d + 2 * qd + d;
        let mlp = 3 * f * d + 2 * f + d;
        2 * v * d + v + self.layers.len() * (attn + mlp)
    }

    /// The config as `config.json` holds it (for `dory init` and exporters).
    pub fn to_json(&self) -> Value {
        let mut value = serde_json::to_value(self).expect("a config is plain data");
        value["architecture"] = "dory".into();
        value
    }
}

/// What a config's JSON needs before serde reads it: nulls dropped (absent), the two
/// rules of presence that serde's defaults cannot state checked (`architecture`, and
/// `exit.threshold` unless the criterion is none), and the defaults of spec §2 that are
/// not zero or absent filled in, some of which depend on other fields.
fn prepare(map: &mut Map<String, Value>, r: &Rules) -> Result<()> {
    map.retain(|_, v| !v.is_null());
    for section in ["o1", "exit"] {
        if let Some(Value::Object(fields)) = map.get_mut(section) {
            fields.retain(|_, v| !v.is_null());
        }
    }
    let architecture =
        map.get("architecture").ok_or_else(|| r.fails("architecture", "required, but missing".into()))?;
    r.check("architecture", architecture == "dory", || format!("must be \"dory\", got {architecture}"))?;
    if let Some(Value::Object(exit)) = map.get("exit") {
        let tested = matches!(exit.get("criterion").and_then(Value::as_str), Some("kl" | "confidence"));
        r.check("exit.threshold", !tested || exit.contains_key("threshold"), || "required, but missing".into())?;
    }
    let d = map.get("head_dim").and_then(Value::as_u64).unwrap_or(0) as f64;
    let defaults = json!({"rope_theta": 10000.0, "rope_full": true, "attn_scale": d.sqrt(), "eps": 1e-6});
    for (key, value) in defaults.as_object().into_iter().flatten() {
        map.entry(key.clone()).or_insert(value.clone());
    }
    if let Some(Value::Object(o1)) = map.get_mut("o1") {
        let d = O1::default();
        let get = |k: &str, default: usize| o1.get(k).and_then(Value::as_u64).map_or(default, |n| n as usize);
        let far = get("stride", d.stride).saturating_mul(get("landmarks", d.landmarks));
        let seal_at = get("sinks", d.sinks).saturating_add(get("window", d.window)).saturating_add(far);
        o1.entry("seal_at").or_insert(seal_at.into());
    }
    Ok(())
}

/// Reads `value` as a `T`; an error names the field (after `prefix`) and what it breaks.
fn read<T: DeserializeOwned>(value: Value, path: &Path, prefix: &str) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let keys = e.path().iter().filter_map(|s| if let Segment::Map { key } = s { Some(key.clone()) } else { None });
        let mut field: Vec<String> = keys.collect();
        let msg = e.inner().to_string();
        let rule = match msg.strip_prefix("missing field `").and_then(|m| m.strip_suffix('`')) {
            Some(missing) => {
                field.push(missing.into());
                "required, but missing".into()
            }
            // serde names Rust types; the author of a config reads JSON.
            None => JSON_WORDS.iter().fold(msg, |m, (rust, json)| m.replace(rust, json)),
        };
        Error::Config { path: path.into(), field: format!("{prefix}{}", field.join(".")), rule }
    })
}

const JSON_WORDS: [(&str, &str); 4] = [
    ("expected usize", "expected a non-negative JSON integer"),
    ("expected f32", "expected a number"),
    ("expected struct O1", "expected an object"),
    ("expected struct ExitRule", "expected an object"),
];

/// A token id or a list of them (the hub writes both).
fn token_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
    let v = Value::deserialize(d)?;
    let items: Vec<&Value> = if let Value::Array(a) = &v { a.iter().collect() } else { vec![&v] };
    let id = |item: &Value| item.as_u64().and_then(|n| u32::try_from(n).ok());
    let bad = || D::Error::custom(format!("must be a token id or a list of them, got {v}"));
    items.into_iter().map(|item| id(item).ok_or_else(bad)).collect()
}

fn first_token_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    Ok(token_ids(d)?.first().copied())
}

/// One id as a number, several as a list.
fn one_or_many<S: Serializer>(ids: &[u32], s: S) -> Result<S::Ok, S::Error> {
    match ids {
        [one] => one.serialize(s),
        many => many.serialize(s),
    }
}
