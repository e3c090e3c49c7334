//! Tokenizer round trips and streamed text that never splits a UTF-8 character.

use dory::tokenizer::{TextStream, Tokenizer};

fn tokenizer(vocab: usize) -> (tempfile::TempDir, Tokenizer) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, dory::init::tokenizer_json(vocab)).unwrap();
    let t = Tokenizer::load(&path, vocab).unwrap();
    (dir, t)
}

#[test]
fn streaming_never_splits_a_character() {
    let (_d, tok) = tokenizer(2000);
    let text = "héllo ☃ wörld 🐟, the quick fox — ünïcödé";
    let ids = tok.encode(text).unwrap();
    assert!(ids.len() > text.chars().count() / 3, "bytes of multi-byte characters are separate tokens");
    assert_eq!(tok.decode(&ids).unwrap(), text);
    let mut stream = TextStream::new();
    let mut pieces = vec![];
    for &id in &ids {
        pieces.push(stream.push(&tok, id).unwrap());
    }
    pieces.push(stream.finish(&tok).unwrap());
    assert!(pieces.iter().all(|p| !p.contains('\u{FFFD}')), "{pieces:?}");
    assert!(pieces.iter().any(|p| p.is_empty()), "some tokens end inside a character");
    assert_eq!(pieces.concat(), text);
}

#[test]
fn a_character_that_never_completes_comes_out_at_the_end() {
    let (_d, tok) = tokenizer(300);
    let ids = tok.encode("a☃").unwrap();
    let mut stream = TextStream::new();
    let mut out = String::new();
    for &id in &ids[..ids.len() - 1] {
        out += &stream.push(&tok, id).unwrap();
    }
    assert_eq!(out, "a");
    assert_eq!(stream.finish(&tok).unwrap(), "\u{FFFD}");
}

#[test]
fn every_id_of_the_random_tokenizer_decodes() {
    let (_d, tok) = tokenizer(1000);
    for id in 2..1000 {
        assert!(!tok.decode(&[id]).unwrap().is_empty(), "id {id}");
    }
    assert_eq!(tok.encode("").unwrap(), Vec::<u32>::new());
}
