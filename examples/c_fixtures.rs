//! Writes the stores that `tests/c/test_mnem.c` opens to check what a C caller gets from a
//! store this build cannot trust: `format-newer` (written by a newer on-disk format) and
//! `damaged` (one record per namespace whose stored bytes are not a valid record). The C
//! API cannot write such bytes, so `scripts/test-c` runs this first:
//! `cargo run --release --example c_fixtures -- DIR`.
//!
//! `damaged` holds three namespaces with the same data, app `damaged`, users:
//! - `intact`: nothing damaged (the control);
//! - `head`: the record `DAMAGED_ID` has an unknown record version, so every read of the
//!   namespace's records fails;
//! - `tail`: the same record lost its last byte, so its searchable prefix still reads and
//!   only reads that decode the whole record fail.
//!
//! Data per namespace: an ADK session `s` with events `e1` "intact tea" and `e2` "intact
//! coffee"; an episode "intact note" with embedding `[1,0]`; the episode `DAMAGED_ID`
//! "damaged tea" with embedding `[0,1]`.

use mnem::{EpisodeInput, KeywordQuery, Mnem, Namespace, OpenOptions, FORMAT_VERSION};
use uuid::Uuid;

const DAMAGED_ID: &str = "0190a5e4-0000-7000-8000-0000000000dd";

fn main() -> Result<(), mnem::Error> {
    let dir = std::env::args().nth(1).expect("usage: c_fixtures DIR");
    let create = OpenOptions { create: true, ..Default::default() };

    let m = Mnem::open(&format!("{dir}/format-newer"), create.clone())?;
    let ns = Namespace::new("future", "u");
    m.put_episodes(&ns, vec![EpisodeInput { primary: "from a newer build".into(), ..Default::default() }])?;
    m.store().set_format_version_for_test(FORMAT_VERSION + 1)?;
    drop(m);

    let m = Mnem::open(&format!("{dir}/damaged"), create.clone())?;
    let id = Uuid::parse_str(DAMAGED_ID).expect("a UUID");
    for user in ["intact", "head", "tail"] {
        let ns = Namespace::new("damaged", user);
        let events = [
            r#"{"id":"e1","author":"user","timestamp":1.0,"content":{"role":"user","parts":[{"text":"intact tea"}]}}"#,
            r#"{"id":"e2","author":"user","timestamp":2.0,"content":{"role":"user","parts":[{"text":"intact coffee"}]}}"#,
        ];
        m.add_session(&ns, "s", &events.join("\n"))?;
        let episode = |primary: &str, id: Option<Uuid>, embedding: Vec<f32>| EpisodeInput {
            id,
            primary: primary.into(),
            embedding: Some(embedding),
            ..Default::default()
        };
        m.put_episodes(
            &ns,
            vec![episode("intact note", None, vec![1.0, 0.0]), episode("damaged tea", Some(id), vec![0.0, 1.0])],
        )?;
        let mut bytes = m.search_episodes(&ns, &KeywordQuery::new("damaged"))?[0].encode();
        match user {
            "head" => bytes[0] = 0xEE,
            "tail" => {
                bytes.pop();
            }
            _ => continue,
        }
        let key = mnem::keys::episode_key(&ns.prefix(), &id);
        m.store().put_raw_for_test("episodes", &key, &bytes)?;
    }
    m.flush()?;
    Ok(())
}
