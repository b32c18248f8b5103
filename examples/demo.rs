//! The README's demo: open a store in a directory, remember a conversation, find it again.
//! Run it twice: the second run finds the first run's memories too (they persisted).

use mnem::{EpisodeInput, KeywordQuery, Mnem, Namespace, OpenOptions};

fn main() -> Result<(), mnem::Error> {
    let path = std::env::args().nth(1).unwrap_or_else(|| "./mnem-demo".into());
    let m = Mnem::open(&path, OpenOptions { create: true, ..Default::default() })?;
    let ns = Namespace::new("demo-app", "ada");

    // An ADK session, as Event.model_dump_json() lines.
    let session = [
        r#"{"id":"e1","author":"user","timestamp":1700000000.0,"content":{"role":"user","parts":[{"text":"I am flying to Lisbon on Friday."}]}}"#,
        r#"{"id":"e2","author":"model","timestamp":1700000005.0,"content":{"role":"model","parts":[{"text":"Noted: Lisbon trip on Friday. Want a window seat?"}]}}"#,
        r#"{"id":"e3","author":"user","timestamp":1700000010.0,"content":{"role":"user","parts":[{"text":"Yes, and I drink jasmine tea, no coffee."}]}}"#,
    ]
    .join("\n");
    let stored = m.add_session(&ns, "trip-planning", &session)?;
    println!("stored {stored} events of session trip-planning in {path}");

    let note = EpisodeInput {
        episode_type: "note".into(),
        primary: "Ada prefers aisle seats on long flights".into(),
        tags: vec!["travel".into()],
        ..Default::default()
    };
    let ids = m.put_episodes(&ns, vec![note])?;
    println!("wrote note {}", ids[0]);

    let found = String::from_utf8(m.search(&ns, "When is the Lisbon trip?")?).expect("JSON is UTF-8");
    println!("\nmnem_search(\"When is the Lisbon trip?\"):\n{found}");

    let query = "window seats for flights";
    println!("\nkeyword_search({query:?}), BM25:");
    for r in m.keyword_search(&ns, &KeywordQuery::new(query))? {
        println!("  {:.4}  [{}] {}", r.score, r.record.episode_type, r.record.primary);
    }
    m.flush()?;
    Ok(())
}
