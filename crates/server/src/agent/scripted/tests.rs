//! Tests of `scripted`.

#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn parses_the_readme_prompt_into_one_batch() {
    assert_eq!(
        plan("write notes.txt: hi and delete old.txt and read readme.txt"),
        Plan::Call(vec![vec![
            Clause::Write("notes.txt".into(), "hi".into()),
            Clause::Delete("old.txt".into()),
            Clause::Read("readme.txt".into()),
        ]])
    );
    assert_eq!(
        plan("list files, read a.txt\nDelete b.txt."),
        Plan::Call(vec![vec![
            Clause::List,
            Clause::Read("a.txt".into()),
            Clause::Delete("b.txt".into())
        ]])
    );
    assert_eq!(plan("count to 3"), Plan::Count(3));
    assert_eq!(
        plan("write a.txt: 1, then delete old.txt"),
        Plan::Call(vec![
            vec![Clause::Write("a.txt".into(), "1".into())],
            vec![Clause::Delete("old.txt".into())]
        ])
    );
    assert_eq!(
        plan("list files and then read a.txt"),
        Plan::Call(vec![vec![Clause::List], vec![Clause::Read("a.txt".into())]])
    );
    assert!(matches!(plan("count to 10001"), Plan::Say(_)));
    assert!(matches!(plan("hello"), Plan::Say(text) if text.contains("list files")));
    assert!(matches!(plan("list files and dance"), Plan::Say(text) if text.contains("\"dance\"")));
}

#[test]
fn reports_results_and_quotes_rejections() {
    let messages = vec![
        ChatMessage::User {
            text: "x".into(),
            message_id: None,
            asked: None,
        },
        ChatMessage::Assistant {
            text: String::new(),
            tool_calls: vec![
                ModelToolCall {
                    id: "call_1".into(),
                    model_id: None,
                    name: "write_file".into(),
                    args: json!({"path": "notes.txt", "content": "hi"}),
                },
                ModelToolCall {
                    id: "call_2".into(),
                    model_id: None,
                    name: "delete_file".into(),
                    args: json!({"path": "old.txt"}),
                },
            ],
        },
        ChatMessage::Tool {
            call_id: "call_1".into(),
            name: "write_file".into(),
            response: super::super::tools::text_result("ok"),
            edited_from: None,
            reply_message_id: None,
        },
        ChatMessage::Tool {
            call_id: "call_2".into(),
            name: "delete_file".into(),
            response: json!({"status": "rejected", "reason": "keep it"}),
            edited_from: None,
            reply_message_id: None,
        },
    ];
    assert_eq!(
        results_answer(&messages),
        "I wrote notes.txt.\nYou rejected deleting old.txt: \"keep it\"."
    );
}

#[test]
fn case_changing_characters_never_cut_a_character() {
    // Their lowercase forms have another byte length than the originals.
    for text in [
        "please \u{212a}\u{212a}",
        "please İİİİİİİİİİ",
        "please write İİİİİİİİİ.txt: x",
        "KKK and read readme.txt",
        "İ and İ, then İ",
        "count to İ",
    ] {
        let _ = plan(text);
    }
    assert_eq!(
        plan("please write İİ.txt: x"),
        Plan::Call(vec![vec![Clause::Write("İİ.txt".into(), "x".into())]])
    );
    assert_eq!(
        plan("READ a.txt AND Delete b.txt"),
        Plan::Call(vec![vec![
            Clause::Read("a.txt".into()),
            Clause::Delete("b.txt".into())
        ]])
    );
}

#[test]
fn long_answers_stream_in_a_bounded_number_of_chunks() {
    let long = "word ".repeat(200_000);
    let pieces = chunks(&long);
    assert!(pieces.len() <= MAX_CHUNKS, "{} chunks", pieces.len());
    assert_eq!(pieces.concat(), long);
    let Plan::Say(answer) = plan(&format!("list files and {}", "x".repeat(900_000))) else {
        panic!("expected help")
    };
    assert!(answer.len() < 1_000, "{} bytes", answer.len());
}

/// Text with what breaks naive parsers: case mappings that change length, combining marks,
/// right-to-left marks, NUL, and the grammar's own words.
fn hostile_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let piece = prop_oneof![
        any::<char>().prop_map(String::from),
        Just("İ".to_owned()),
        Just("\u{212a}".to_owned()),
        Just("ß".to_owned()),
        Just("\u{0301}".to_owned()),
        Just("\u{202e}".to_owned()),
        Just("\0".to_owned()),
        Just(" and ".to_owned()),
        Just(", ".to_owned()),
        Just(" then ".to_owned()),
        Just("please ".to_owned()),
        Just("read ".to_owned()),
        Just("write ".to_owned()),
        Just("delete ".to_owned()),
        Just(": ".to_owned()),
        Just("\n".to_owned()),
        Just("count to ".to_owned()),
        Just("delegate ".to_owned()),
        Just("default/demo".to_owned()),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest::proptest! {
    #[test]
    fn prop_the_grammar_takes_any_text(text in hostile_text()) {
        match plan(&text) {
            Plan::Call(rounds) => {
                for clause in rounds.iter().flatten() {
                    // Every path and content is a piece of what the user wrote.
                    match clause {
                        Clause::List => {}
                        Clause::Read(path) | Clause::Delete(path) => {
                            proptest::prop_assert!(text.contains(path.as_str()));
                        }
                        Clause::Write(path, content) => {
                            proptest::prop_assert!(text.contains(path.as_str()));
                            proptest::prop_assert!(text.contains(content.as_str()));
                        }
                        Clause::Delegate { agent, request } => {
                            proptest::prop_assert!(text.contains(agent.as_str()));
                            proptest::prop_assert!(text.contains(request.as_str()));
                        }
                        Clause::Ask(questions) => {
                            for question in questions {
                                proptest::prop_assert!(text.contains(question.question.as_str()));
                                for choice in &question.choices {
                                    proptest::prop_assert!(text.contains(choice.as_str()));
                                }
                            }
                        }
                    }
                }
            }
            Plan::Say(answer) => proptest::prop_assert!(!answer.is_empty()),
            Plan::Count(n) => proptest::prop_assert!((1..=MAX_COUNT).contains(&n)),
        }
    }

    #[test]
    fn prop_chunks_keep_every_byte(text in hostile_text()) {
        let pieces = chunks(&text);
        proptest::prop_assert!(pieces.len() <= MAX_CHUNKS.max(1) + 1);
        proptest::prop_assert_eq!(pieces.concat(), text);
    }
}

#[test]
fn ask_clauses_of_a_round_make_one_question_call() {
    let Plan::Call(rounds) = plan(
        "ask Which database? PostgreSQL / SQLite / other, ask Which features? metrics + tracing \
         and ask Anything else? and write notes.txt: hi",
    ) else {
        panic!("not a call");
    };
    assert_eq!(rounds.len(), 1);
    let Clause::Ask(questions) = &rounds[0][0] else {
        panic!("not a question: {:?}", rounds[0][0]);
    };
    assert_eq!(
        questions_to_args(questions),
        json!({"questions": [
            {"question": "Which database?", "choices": ["PostgreSQL", "SQLite", "other"]},
            {"question": "Which features?", "choices": ["metrics", "tracing"], "multiple": true},
            {"question": "Anything else?"}]})
    );
    assert_eq!(rounds[0][1].tool(), "write_file");
    assert!(matches!(plan("ask nothing"), Plan::Say(_)));
}

#[test]
fn delegate_calls_the_agent_tool_with_the_rest_as_its_request() {
    assert_eq!(
        plan("delegate default/demo: write sub.txt: hi, and more"),
        Plan::Call(vec![vec![Clause::Delegate {
            agent: "default/demo".into(),
            request: "write sub.txt: hi, and more".into(),
        }]])
    );
    assert_eq!(
        Clause::Delegate {
            agent: "my.ns/x".into(),
            request: "go".into()
        }
        .tool(),
        "my_ns__x"
    );
    assert!(matches!(plan("delegate nobody"), Plan::Say(_)));
}
