//! What a client names a task by and what the store gives back for it, from any bytes: an
//! id that is not one never reaches the store, and a record read back (sealed, but written
//! by some other version or replica) is shown without a panic and reads back the same.
#![no_main]

use exec_host::gateway::task_record::{Record, is_task_id, record_key};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (id, bytes) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let id = String::from_utf8_lossy(id);
    if is_task_id(&id) {
        // A key of its own under tasks/: no other entry of the store is named by an id.
        let key = record_key(&id);
        assert!(key.len() == 6 + 32 && !key[6..].contains(['/', '.']), "{key}");
    }
    if let Some(record) = Record::read(bytes) {
        let shown = serde_json::to_value(record.detailed(&id)).unwrap();
        assert_eq!(shown["taskId"].as_str(), Some(&*id));
        let again = Record::read(&record.to_bytes()).expect("a record written reads back");
        assert_eq!(again.to_bytes(), record.to_bytes());
    }
});
