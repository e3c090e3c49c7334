//! config.json (spec §2): defaults, and every malformed config refused with an error
//! that names the field and its rule.

use std::path::Path;

use dory::config::O1;
use dory::{Config, ExitRule, Result};
use serde_json::{Map, Value};

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

#[test]
fn type_errors_read_as_json() {
    use serde_json::json;
    let cases = [
        (
            "passes",
            json!(2.5),
            "field `passes`: invalid type: floating point `2.5`, expected a non-negative JSON integer",
        ),
        (
            "layers",
            json!(["sliding", "global"]),
            "field `layers`: unknown variant `global`, expected `sliding` or `full`",
        ),
        ("eps", json!("x"), "field `eps`: invalid type: string \"x\", expected a number"),
        ("o1", json!(5), "field `o1`: invalid type: integer `5`, expected an object"),
        ("o1", json!({"rect": 3}), "field `o1.rect`: invalid type: integer `3`, expected a boolean"),
        ("exit", json!({"threshold": 1}), "field `exit.criterion`: required, but missing"),
        ("eos_token_id", json!("a"), "field `eos_token_id`: must be a token id or a list of them, got \"a\""),
    ];
    for (key, value, want) in cases {
        let e = rule_of(with(|m| {
            m.insert(key.into(), value);
        }));
        assert_eq!(e, format!("config.json: {want}"));
    }
}

#[test]
fn nulls_are_absent_and_extras_ignored() {
    use serde_json::json;
    let c = with(|m| {
        m.insert("rope_theta".into(), Value::Null);
        m.insert("bos_token_id".into(), Value::Null);
        m.insert("o1".into(), json!({"sinks": null, "window": 8, "colour": "blue"}));
        m.insert("exit".into(), json!({"criterion": "confidence", "threshold": 0.9, "why": 1}));
        m.insert("torch_dtype".into(), json!("bfloat16"));
    })
    .unwrap();
    assert_eq!((c.rope_theta, c.bos_token_id), (10000.0, None));
    let o1 = c.o1.unwrap();
    assert_eq!((o1.sinks, o1.window, o1.seal_at), (4, 8, 4 + 8 + 8 * 32));
    assert_eq!(c.exit.to_string(), "confidence:0.9");
}

#[test]
fn a_config_reads_its_own_json_back_exactly() {
    // Found by fuzzing: without correctly rounded float parsing, a long threshold came
    // back one ulp off after `to_json`.
    let text =
        BASE.replace(r#""window":4}"#, r#""window":4,"exit":{"criterion":"kl","threshold":118446744073709551615.0}}"#);
    let c = Config::parse(&text, Path::new("config.json")).unwrap();
    let again = Config::parse(&c.to_json().to_string(), Path::new("again")).unwrap();
    assert_eq!(again, c);
    assert_eq!(c.exit.threshold, 118446744073709551615.0);
}
