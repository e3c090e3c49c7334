//! `config.json` (spec §2), validated field by field.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The two kinds of attention layer (spec §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerKind {
    /// Sees the last `window` positions, itself included.
    Sliding,
    /// Sees every earlier position (exactly, or in O(1) memory, §6).
    Full,
}

/// The O(1) full layer's settings (spec §6).
#[derive(Clone, Debug, PartialEq)]
pub struct O1 {
    pub sinks: usize,
    pub window: usize,
    pub landmarks: usize,
    pub stride: usize,
    pub rect: bool,
    pub rcond: f64,
    pub seal_at: usize,
}

impl Default for O1 {
    fn default() -> Self {
        let (sinks, window, landmarks, stride) = (4, 512, 32, 8);
        O1 { sinks, window, landmarks, stride, rect: true, rcond: 1e-4, seal_at: sinks + window + stride * landmarks }
    }
}

impl O1 {
    /// These settings with `overrides` ("landmarks=16,rect=false", …) applied and the
    /// result checked like a config's `o1` section.
    pub fn with_overrides(&self, overrides: &str) -> Result<O1> {
        let mut map = Map::new();
        map.insert("sinks".into(), self.sinks.into());
        map.insert("window".into(), self.window.into());
        map.insert("landmarks".into(), self.landmarks.into());
        map.insert("stride".into(), self.stride.into());
        map.insert("rect".into(), self.rect.into());
        map.insert("rcond".into(), self.rcond.into());
        map.insert("seal_at".into(), self.seal_at.into());
        for item in overrides.split(',').filter(|s| !s.trim().is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| Error::Invalid(format!("--o1: expected KEY=VALUE, got {item:?}")))?;
            let key = key.trim();
            if !map.contains_key(key) {
                return Err(Error::Invalid(format!(
                    "--o1: unknown setting {key:?} (sinks, window, landmarks, stride, rect, rcond, seal_at)"
                )));
            }
            let value: Value = serde_json::from_str(value.trim())
                .map_err(|_| Error::Invalid(format!("--o1: {key}: {value:?} is not a number or true/false")))?;
            map.insert(key.into(), value);
        }
        Fields { map: &map, path: Path::new("--o1"), prefix: "o1." }.o1()
    }
}

/// What decides that a decoded token leaves the loop early (spec §5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Criterion {
    None,
    /// KL(p_k ‖ p_{k−1}) < threshold.
    Kl,
    /// max p_k ≥ threshold.
    Confidence,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExitRule {
    pub criterion: Criterion,
    pub threshold: f64,
    pub min_passes: usize,
}

impl ExitRule {
    pub const NONE: ExitRule = ExitRule { criterion: Criterion::None, threshold: 0.0, min_passes: 1 };
}

/// A model's configuration, every default filled in.
#[derive(Clone, Debug, PartialEq)]
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
    pub rope_theta: f64,
    pub rope_full: bool,
    pub attn_scale: f32,
    pub eps: f32,
    pub bos_token_id: Option<u32>,
    pub eos_token_ids: Vec<u32>,
    pub max_context: Option<usize>,
    pub o1: Option<O1>,
    pub exit: ExitRule,
}

impl Config {
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Config::parse(&text, path)
    }

    /// Parses the text of a config; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::Json { path: path.into(), msg: format!("invalid JSON: {e}") })?;
        let Value::Object(map) = value else {
            return Err(Error::Json { path: path.into(), msg: "expected a JSON object".into() });
        };
        Fields { map: &map, path, prefix: "" }.config()
    }

    /// Width of the fused q | k | v | gate projection.
    pub fn qkvg_width(&self) -> usize {
        2 * self.heads * self.head_dim + 2 * self.kv_heads * self.head_dim
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
        let mut m = Map::new();
        m.insert("architecture".into(), "dory".into());
        m.insert("vocab_size".into(), self.vocab_size.into());
        m.insert("hidden".into(), self.hidden.into());
        m.insert("heads".into(), self.heads.into());
        m.insert("kv_heads".into(), self.kv_heads.into());
        m.insert("head_dim".into(), self.head_dim.into());
        m.insert("ffn".into(), self.ffn.into());
        let layers = self.layers.iter().map(|k| match k {
            LayerKind::Sliding => "sliding",
            LayerKind::Full => "full",
        });
        m.insert("layers".into(), layers.collect::<Vec<_>>().into());
        m.insert("passes".into(), self.passes.into());
        m.insert("window".into(), self.window.into());
        m.insert("rope_theta".into(), self.rope_theta.into());
        m.insert("rope_full".into(), self.rope_full.into());
        m.insert("attn_scale".into(), f64::from(self.attn_scale).into());
        m.insert("eps".into(), f64::from(self.eps).into());
        if let Some(b) = self.bos_token_id {
            m.insert("bos_token_id".into(), b.into());
        }
        match self.eos_token_ids.as_slice() {
            [] => {}
            [e] => {
                m.insert("eos_token_id".into(), (*e).into());
            }
            es => {
                m.insert("eos_token_id".into(), es.to_vec().into());
            }
        }
        if let Some(c) = self.max_context {
            m.insert("max_context".into(), c.into());
        }
        if let Some(o) = &self.o1 {
            m.insert(
                "o1".into(),
                serde_json::json!({
                    "sinks": o.sinks, "window": o.window, "landmarks": o.landmarks,
                    "stride": o.stride, "rect": o.rect, "rcond": o.rcond, "seal_at": o.seal_at,
                }),
            );
        }
        if self.exit.criterion != Criterion::None {
            let criterion = match self.exit.criterion {
                Criterion::Kl => "kl",
                _ => "confidence",
            };
            m.insert(
                "exit".into(),
                serde_json::json!({
                    "criterion": criterion, "threshold": self.exit.threshold,
                    "min_passes": self.exit.min_passes,
                }),
            );
        }
        Value::Object(m)
    }
}

/// One JSON object's fields, read with errors that name the field and its rule.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: &'a Path,
    /// "o1." or "exit." inside a section, so errors name the full field.
    prefix: &'a str,
}

impl Fields<'_> {
    fn err(&self, field: &str, rule: impl Into<String>) -> Error {
        Error::Config { path: PathBuf::from(self.path), field: format!("{}{field}", self.prefix), rule: rule.into() }
    }

    fn get(&self, field: &str) -> Option<&Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    fn required(&self, field: &str) -> Result<&Value> {
        self.get(field).ok_or_else(|| self.err(field, "required, but missing"))
    }

    fn int(&self, field: &str, default: Option<usize>) -> Result<usize> {
        let Some(v) = self.get(field) else {
            return default.ok_or_else(|| self.err(field, "required, but missing"));
        };
        v.as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| self.err(field, format!("must be a non-negative JSON integer, got {v}")))
    }

    fn int_min(&self, field: &str, default: Option<usize>, min: usize) -> Result<usize> {
        let n = self.int(field, default)?;
        if n < min {
            return Err(self.err(field, format!("must be ≥ {min}, got {n}")));
        }
        Ok(n)
    }

    fn float(&self, field: &str, default: f64) -> Result<f64> {
        match self.get(field) {
            None => Ok(default),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .ok_or_else(|| self.err(field, format!("must be a finite number, got {v}"))),
        }
    }

    fn bool(&self, field: &str, default: bool) -> Result<bool> {
        match self.get(field) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| self.err(field, format!("must be true or false, got {v}"))),
        }
    }

    /// A token id or a list of them (the hub writes both), each < `vocab`.
    fn token_ids(&self, field: &str, vocab: usize) -> Result<Vec<u32>> {
        let Some(v) = self.get(field) else {
            return Ok(vec![]);
        };
        let items: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        items
            .into_iter()
            .map(|item| {
                let id = item
                    .as_u64()
                    .ok_or_else(|| self.err(field, format!("must be a token id or a list of them, got {v}")))?;
                if id as usize >= vocab {
                    return Err(self.err(field, format!("token id {id} is not below vocab_size {vocab}")));
                }
                Ok(id as u32)
            })
            .collect()
    }

    fn section(&self, field: &str) -> Result<Option<Fields<'_>>> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Fields {
                map,
                path: self.path,
                prefix: match field {
                    "o1" => "o1.",
                    _ => "exit.",
                },
            })),
            Some(v) => Err(self.err(field, format!("must be an object, got {v}"))),
        }
    }

    fn config(&self) -> Result<Config> {
        match self.required("architecture")? {
            Value::String(s) if s == "dory" => {}
            v => return Err(self.err("architecture", format!("must be \"dory\", got {v}"))),
        }
        let vocab_size = self.int_min("vocab_size", None, 1)?;
        let hidden = self.int_min("hidden", None, 4)?;
        if hidden % 4 != 0 {
            return Err(self.err("hidden", format!("must be a multiple of 4, got {hidden}")));
        }
        let heads = self.int_min("heads", None, 4)?;
        let kv_heads = self.int_min("kv_heads", None, 1)?;
        if heads != 4 * kv_heads {
            return Err(self.err("heads", format!("must be 4 × kv_heads = {}, got {heads}", 4 * kv_heads)));
        }
        let head_dim = self.int("head_dim", None)?;
        if head_dim % 8 != 0 || !(8..=256).contains(&head_dim) {
            return Err(self.err("head_dim", format!("must be a multiple of 8 in 8…256, got {head_dim}")));
        }
        let ffn = self.int_min("ffn", None, 4)?;
        if ffn % 4 != 0 {
            return Err(self.err("ffn", format!("must be a multiple of 4, got {ffn}")));
        }
        let layers = self.layers()?;
        let passes = self.int_min("passes", None, 1)?;
        let window = self.int_min("window", None, 1)?;
        let rope_theta = self.float("rope_theta", 10000.0)?;
        if rope_theta <= 0.0 {
            return Err(self.err("rope_theta", format!("must be > 0, got {rope_theta}")));
        }
        let rope_full = self.bool("rope_full", true)?;
        let attn_scale = self.float("attn_scale", (head_dim as f64).sqrt())? as f32;
        let eps = self.float("eps", 1e-6)?;
        if eps <= 0.0 {
            return Err(self.err("eps", format!("must be > 0, got {eps}")));
        }
        let bos = self.token_ids("bos_token_id", vocab_size)?;
        let eos_token_ids = self.token_ids("eos_token_id", vocab_size)?;
        let max_context = match self.get("max_context") {
            None => None,
            Some(_) => Some(self.int_min("max_context", None, 1)?),
        };
        let o1 = self.section("o1")?.map(|s| s.o1()).transpose()?;
        let exit = match self.section("exit")? {
            Some(s) => s.exit()?,
            None => ExitRule::NONE,
        };
        Ok(Config {
            vocab_size,
            hidden,
            heads,
            kv_heads,
            head_dim,
            ffn,
            layers,
            passes,
            window,
            rope_theta,
            rope_full,
            attn_scale,
            eps: eps as f32,
            bos_token_id: bos.first().copied(),
            eos_token_ids,
            max_context,
            o1,
            exit,
        })
    }

    fn layers(&self) -> Result<Vec<LayerKind>> {
        let rule = "must be a non-empty list of \"sliding\" and \"full\"";
        let Value::Array(items) = self.required("layers")? else {
            return Err(self.err("layers", rule));
        };
        if items.is_empty() {
            return Err(self.err("layers", rule));
        }
        items
            .iter()
            .map(|v| match v.as_str() {
                Some("sliding") => Ok(LayerKind::Sliding),
                Some("full") => Ok(LayerKind::Full),
                _ => Err(self.err("layers", format!("{rule}, got {v}"))),
            })
            .collect()
    }

    fn o1(&self) -> Result<O1> {
        let d = O1::default();
        let sinks = self.int("sinks", Some(d.sinks))?;
        let window = self.int_min("window", Some(d.window), 1)?;
        let landmarks = self.int_min("landmarks", Some(d.landmarks), 1)?;
        if landmarks > 32 {
            return Err(self.err("landmarks", format!("must be in 1…32, got {landmarks}")));
        }
        let stride = self.int_min("stride", Some(d.stride), 1)?;
        let rect = self.bool("rect", d.rect)?;
        let rcond = self.float("rcond", d.rcond)?;
        if !(rcond > 0.0 && rcond < 1.0) {
            return Err(self.err("rcond", format!("must be in (0, 1), got {rcond}")));
        }
        let least = sinks + stride * landmarks;
        let seal_at = self.int_min("seal_at", Some(sinks + window + stride * landmarks), least)?;
        Ok(O1 { sinks, window, landmarks, stride, rect, rcond, seal_at })
    }

    fn exit(&self) -> Result<ExitRule> {
        let criterion = match self.required("criterion")?.as_str() {
            Some("none") => Criterion::None,
            Some("kl") => Criterion::Kl,
            Some("confidence") => Criterion::Confidence,
            _ => {
                let v = self.required("criterion")?;
                return Err(self.err("criterion", format!("must be \"none\", \"kl\" or \"confidence\", got {v}")));
            }
        };
        let threshold = match criterion {
            Criterion::None => self.float("threshold", 0.0)?,
            _ => {
                self.required("threshold")?;
                self.float("threshold", 0.0)?
            }
        };
        if threshold < 0.0 {
            return Err(self.err("threshold", format!("must be ≥ 0, got {threshold}")));
        }
        let min_passes = self.int_min("min_passes", Some(1), 1)?;
        Ok(ExitRule { criterion, threshold, min_passes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"{"architecture":"dory","vocab_size":264,"hidden":32,"heads":8,
        "kv_heads":2,"head_dim":16,"ffn":64,"layers":["sliding","full"],"passes":3,"window":4}"#;

    fn with(edit: impl FnOnce(&mut Map<String, Value>)) -> Result<Config> {
        let Value::Object(mut m) = serde_json::from_str(BASE).unwrap() else { unreachable!() };
        edit(&mut m);
        Config::parse(&Value::Object(m).to_string(), Path::new("config.json"))
    }

    fn rule_of(r: Result<Config>) -> String {
        r.expect_err("the config must be refused").to_string()
    }

    #[test]
    fn defaults_are_filled_in() {
        let c = with(|_| {}).unwrap();
        assert_eq!(c.attn_scale, 4.0);
        assert_eq!(c.rope_theta, 10000.0);
        assert!(c.rope_full);
        assert_eq!(c.eps, 1e-6);
        assert_eq!(c.exit, ExitRule::NONE);
        assert_eq!(c.o1, None);
        assert_eq!(c.qkvg_width(), 2 * 128 + 2 * 32);
    }

    #[test]
    fn o1_defaults_and_seal_at() {
        let c = with(|m| {
            m.insert("o1".into(), serde_json::json!({"sinks": 2, "window": 6}));
        })
        .unwrap();
        let o = c.o1.unwrap();
        assert_eq!((o.sinks, o.window, o.landmarks, o.stride), (2, 6, 32, 8));
        assert_eq!(o.seal_at, 2 + 6 + 8 * 32);
        let e = rule_of(with(|m| {
            m.insert("o1".into(), serde_json::json!({"sinks": 2, "landmarks": 4, "stride": 2, "seal_at": 9}));
        }));
        assert!(e.contains("field `o1.seal_at`: must be ≥ 10"), "{e}");
    }

    #[test]
    fn each_rule_names_its_field() {
        use serde_json::json;
        // (field named in the error, key to set, value; null removes the key)
        let cases = [
            ("architecture", "architecture", json!("llama")),
            ("vocab_size", "vocab_size", Value::Null),
            ("hidden", "hidden", json!(30)),
            ("heads", "heads", json!(6)),
            ("head_dim", "head_dim", json!(12)),
            ("head_dim", "head_dim", json!(264)),
            ("ffn", "ffn", json!(62)),
            ("layers", "layers", json!(["sliding", "global"])),
            ("layers", "layers", json!([])),
            ("passes", "passes", json!(0)),
            ("passes", "passes", json!(2.5)),
            ("window", "window", Value::Null),
            ("eps", "eps", json!(0)),
            ("eos_token_id", "eos_token_id", json!(264)),
            ("o1.landmarks", "o1", json!({"landmarks": 33})),
            ("o1.rcond", "o1", json!({"rcond": 1.0})),
            ("exit.threshold", "exit", json!({"criterion": "kl"})),
            ("exit.criterion", "exit", json!({"criterion": "entropy"})),
            ("exit.min_passes", "exit", json!({"criterion": "none", "min_passes": 0})),
        ];
        for (field, key, value) in cases {
            let e = rule_of(with(|m| {
                match value {
                    Value::Null => m.remove(key),
                    v => m.insert(key.into(), v),
                };
            }));
            assert!(e.starts_with(&format!("config.json: field `{field}`:")), "{field}: {e}");
        }
    }

    #[test]
    fn o1_overrides() {
        let base = O1::default();
        let o = base.with_overrides("landmarks=16, rect=false").unwrap();
        assert_eq!((o.landmarks, o.rect, o.window, o.seal_at), (16, false, 512, base.seal_at));
        assert!(base.with_overrides("landmarks=40").unwrap_err().to_string().contains("o1.landmarks"));
        assert!(base.with_overrides("seal_at=3").unwrap_err().to_string().contains("o1.seal_at"));
        assert!(base.with_overrides("colour=1").unwrap_err().to_string().contains("unknown setting"));
        assert!(base.with_overrides("rect").unwrap_err().to_string().contains("KEY=VALUE"));
    }

    #[test]
    fn bad_json_is_named() {
        let e = Config::parse("{\"architecture\": ", Path::new("m/config.json")).unwrap_err();
        assert!(e.to_string().starts_with("m/config.json: invalid JSON"), "{e}");
        let e = Config::parse("[1]", Path::new("config.json")).unwrap_err();
        assert!(e.to_string().contains("expected a JSON object"), "{e}");
    }

    #[test]
    fn token_lists_and_round_trip() {
        let c = with(|m| {
            m.insert("bos_token_id".into(), serde_json::json!([0, 5]));
            m.insert("eos_token_id".into(), serde_json::json!([1, 2]));
            m.insert("exit".into(), serde_json::json!({"criterion": "kl", "threshold": 0.1, "min_passes": 2}));
            m.insert("o1".into(), serde_json::json!({}));
            m.insert("unknown_extra".into(), serde_json::json!("ignored"));
        })
        .unwrap();
        assert_eq!(c.bos_token_id, Some(0));
        assert_eq!(c.eos_token_ids, vec![1, 2]);
        let again = Config::parse(&c.to_json().to_string(), Path::new("x")).unwrap();
        assert_eq!(again, Config { bos_token_id: Some(0), ..c });
    }
}
