//! Unit tests of the simulated tools, tool-call parsing and the agent loop, driven by scripted
//! model outputs; and the shipped tasks judged on the default model's recorded outputs.

use super::agent::TOOL_RESULT_ROLE;
use super::tools::*;
use super::*;
use serde_json::json;

#[test]
fn arithmetic_evaluates_with_precedence_and_parentheses() {
    assert_eq!(eval_arithmetic("234 * 17"), Ok(3978.0));
    assert_eq!(eval_arithmetic("2 * (3 + 4) - -1"), Ok(15.0));
    assert_eq!(eval_arithmetic("19.99*3"), Ok(19.99 * 3.0));
    assert_eq!(eval_arithmetic("1,250 / 25"), Ok(50.0));
    assert!(eval_arithmetic("1 / 0").is_err());
    assert!(eval_arithmetic("2 +").is_err());
    assert!(eval_arithmetic("rm -rf /").is_err());
    assert!(eval_arithmetic("(1 + 2").is_err());
    assert_eq!(format_number(3978.0), "3978");
    assert_eq!(format_number(19.99 * 3.0), "59.97");
}

#[test]
fn parse_calls_accepts_the_list_format_and_variants() {
    let out = r#"<tool_call>[{"name": "f", "arguments": {"x": 1}}, {"name": "g", "arguments": {}}]</tool_call>"#;
    let calls = parse_calls(out).expect("parses").expect("has calls");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0],
        ParsedCall {
            name: "f".into(),
            arguments: json!({"x": 1})
        }
    );
    let single = parse_calls("<tool_call>\n{'name': 'f', 'arguments': {'x': 'a'}}\n</tool_call>");
    assert_eq!(
        single.expect("parses").expect("calls")[0].arguments,
        json!({"x": "a"})
    );
    let as_string =
        parse_calls(r#"<tool_call>{"name": "f", "arguments": "{\"x\": 2}"}</tool_call>"#);
    assert_eq!(
        as_string.expect("parses").expect("calls")[0].arguments,
        json!({"x": 2})
    );
    assert_eq!(parse_calls("<tool_call>[]</tool_call>"), Ok(Some(vec![])));
    assert_eq!(parse_calls("The answer is 4."), Ok(None));
}

#[test]
fn parse_calls_rejects_malformed_blocks() {
    assert!(parse_calls("<tool_call>[{\"name\": \"f\"")
        .unwrap_err()
        .contains("not closed"));
    assert!(parse_calls("<tool_call>[{name: f}]</tool_call>")
        .unwrap_err()
        .contains("not valid JSON"));
    assert!(parse_calls("<tool_call>[{\"arguments\": {}}]</tool_call>")
        .unwrap_err()
        .contains("\"name\""));
    assert!(parse_calls("<tool_call>[{\"name\": \"f\", \"arguments\": 3}]</tool_call>").is_err());
    assert!(parse_calls("<tool_call>42</tool_call>").is_err());
}

fn weather_task() -> Task {
    let w = load("agent").expect("agent loads");
    w.tasks
        .into_iter()
        .find(|t| t.id == "temperature-lookup")
        .expect("task exists")
}

fn call(name: &str, args: serde_json::Value) -> String {
    format!(
        "<tool_call>[{}]</tool_call>",
        json!({"name": name, "arguments": args})
    )
}

fn run_script(task: &Task, outputs: &[&str]) -> TaskResult {
    let mut run = TaskRun::new(task);
    for (i, out) in outputs.iter().enumerate() {
        match run.feed(out, false) {
            Next::Done(r) => {
                assert_eq!(i + 1, outputs.len(), "finished before the script ended");
                return r;
            }
            Next::Continue => {}
        }
    }
    panic!("script ended before the task finished");
}

#[test]
fn simulated_tools_look_up_and_compute() {
    let task = weather_task();
    let r = |args| {
        execute(
            &task.tools,
            &ParsedCall {
                name: "get_temperature".into(),
                arguments: args,
            },
        )
    };
    assert_eq!(r(json!({"city": " oslo "})), "-3");
    assert!(r(json!({"city": "Lima"})).starts_with("error"));
    assert!(r(json!({"town": "Oslo"})).contains("missing argument"));
    let unknown = execute(
        &task.tools,
        &ParsedCall {
            name: "shell".into(),
            arguments: json!({}),
        },
    );
    assert!(unknown.contains("unknown tool") && unknown.contains("get_temperature"));
}

#[test]
fn right_tool_then_right_fact_passes() {
    let task = weather_task();
    let mut run = TaskRun::new(&task);
    assert_eq!(run.max_tokens(), 64);
    let first = call("get_temperature", json!({"city": "Oslo"}));
    assert_eq!(run.feed(&first, false), Next::Continue);
    let Prompt::Chat(m) = run.prompt() else {
        panic!("chat prompt")
    };
    assert_eq!(m[m.len() - 2].role, "assistant");
    assert_eq!(m[m.len() - 2].content, first);
    assert_eq!(m[m.len() - 1].role, TOOL_RESULT_ROLE);
    assert!(
        m[m.len() - 1].content.contains("<tool_response>") && m[m.len() - 1].content.contains("-3")
    );
    let Next::Done(r) = run.feed("It is -3 °C in Oslo.", false) else {
        panic!("done")
    };
    assert_eq!(r.outcome, Outcome::Pass);
    assert_eq!(r.turns, 2);
    assert_eq!(
        r.tool_calls,
        vec![ToolCall {
            name: "get_temperature".into(),
            arguments: json!({"city": "Oslo"}),
            result: "-3".into()
        }]
    );
    assert_eq!(r.final_text, "It is -3 °C in Oslo.");
}

#[test]
fn wrong_argument_fails_naming_the_required_call() {
    let task = weather_task();
    let r = run_script(
        &task,
        &[
            &call("get_temperature", json!({"city": "Paris"})),
            "It is -3 °C.",
        ],
    );
    let Outcome::Fail { reason } = r.outcome else {
        panic!("should fail: {:?}", r.outcome)
    };
    assert!(
        reason.contains("get_temperature(city=\"Oslo\")") && reason.contains("Paris"),
        "{reason}"
    );
}

#[test]
fn right_tool_but_wrong_final_fact_fails() {
    let task = weather_task();
    let r = run_script(
        &task,
        &[
            &call("get_temperature", json!({"city": "oslo"})),
            "It is 18 °C in Oslo.",
        ],
    );
    assert!(matches!(r.outcome, Outcome::Fail { .. }), "{:?}", r.outcome);
    assert_eq!(r.tool_calls.len(), 1);
}

#[test]
fn no_call_fails() {
    let task = weather_task();
    let r = run_script(&task, &["The temperature in Oslo is -3 degrees Celsius."]);
    let Outcome::Fail { reason } = r.outcome else {
        panic!("should fail")
    };
    assert!(reason.contains("no tool was called"), "{reason}");
    assert_eq!(r.turns, 1);
}

#[test]
fn malformed_call_fails_or_abstains_at_the_limit() {
    let task = weather_task();
    let r = run_script(
        &task,
        &["<tool_call>[{\"name\": get_temperature}]</tool_call>"],
    );
    let Outcome::Fail { reason } = r.outcome else {
        panic!("should fail")
    };
    assert!(reason.contains("malformed tool call"), "{reason}");
    let mut run = TaskRun::new(&task);
    let Next::Done(r) = run.feed("<tool_call>[{\"name\": \"get_temp", true) else {
        panic!("done")
    };
    assert!(
        matches!(r.outcome, Outcome::Abstain { .. }),
        "{:?}",
        r.outcome
    );
}

#[test]
fn still_calling_at_max_turns_fails() {
    let task = weather_task();
    let c = call("get_temperature", json!({"city": "Oslo"}));
    let r = run_script(&task, &[&c, &c, &c]);
    let Outcome::Fail { reason } = r.outcome else {
        panic!("should fail")
    };
    assert!(reason.contains("within 3 turns"), "{reason}");
    assert_eq!(r.tool_calls.len(), 3);
}

#[test]
fn two_tools_in_sequence_with_spacing_differences() {
    let w = load("agent").expect("loads");
    let task = w
        .tasks
        .iter()
        .find(|t| t.id == "order-total")
        .expect("task");
    let r = run_script(
        task,
        &[
            &call("get_price", json!({"product_id": "a12"})),
            &call("calculate", json!({"expression": "3*19.99"})),
            "3 units cost 59.97 euros.",
        ],
    );
    assert_eq!(r.outcome, Outcome::Pass);
    assert_eq!(r.tool_calls[1].result, "59.97");
    let mult = w.tasks.iter().find(|t| t.id == "multiply").expect("task");
    let r = run_script(
        mult,
        &[
            &call("calculate", json!({"expression": "234*17"})),
            "234 * 17 = 3978.",
        ],
    );
    assert_eq!(r.outcome, Outcome::Pass);
}

#[test]
fn plain_tasks_finish_on_the_first_output() {
    let w = load("chat").expect("loads");
    let mut run = TaskRun::new(&w.tasks[0]);
    let Next::Done(r) = run.feed("The capital of France is Paris.", false) else {
        panic!("done")
    };
    assert_eq!((r.outcome, r.turns), (Outcome::Pass, 1));
    // A tool-call-looking answer in a plain task is just text.
    let Next::Done(r) = TaskRun::new(&w.tasks[0]).feed("<tool_call>", false) else {
        panic!("done")
    };
    assert!(matches!(r.outcome, Outcome::Fail { .. }));
}

/// The default model's greedy outputs recorded when the tasks were chosen, and the outcome each
/// should get: keeps the checks and the comments in `workloads/*.toml` honest.
#[test]
fn shipped_tasks_judge_the_recorded_default_model_outputs() {
    let recorded: &[(&str, &str, &str, bool, &str)] = &[
        ("chat", "capital-of-france", "The capital of France is Paris.", false, "pass"),
        ("chat", "symbol-for-gold", "The chemical symbol for gold is Au. It is a metal that is used to make coins.", false, "pass"),
        ("chat", "three-sleep-tips", "1. **Avoiding Caffeine**: avoid it.\n\n2. **Creating a Restful Sleep Environment**: dark.\n\n3. **Maintaining a Regular Sleep Schedule**: Try to", true, "pass"),
        ("chat", "add-two-numbers", "17 + 25 = 32 in both the original and the original form.", false, "fail"),
        ("chat", "largest-planet", "The largest planet in the solar system is Neptune, but it's actually a planet in its own right.", false, "fail"),
        ("chat", "unknowable-name", "Your name is \"Alec\" - a name of a famous 19th-century French artist.", false, "fail"),
        ("code", "python-is-even", " n % 2 == 0\n```\n\nThis implementation uses a while loop", true, "pass"),
        ("code", "javascript-last-element", " arr[arr.length - 1];\n}\n\n// Example usage:", true, "pass"),
        ("code", "python-clamp", " x\n\n# Example usage:\nprint(clamp(10, 10, 10))", true, "fail"),
        ("code", "rust-max-of-slice", "map(i32::operator()(i32::operator()(10)));\n}\n\n// \n// ", true, "fail"),
        ("extract", "order-line", "{\n  \"product\": \"Green Tea\",\n  \"quantity\": 3,\n  \"price\": 4.50\n}", false, "pass"),
        ("extract", "contact", "{\n  \"name\": \"Tom Becker\",\n  \"email\": \"tom.becker@example.com\"\n}\n```", false, "pass"),
        ("extract", "person", "JSON:\n{\n  \"name\": \"Maria Lopez\",\n  \"age\": 34,\n  \"city\": \"Máximina\"\n}", false, "fail"),
        ("extract", "meeting", "{\n  \"type\": \"json\",\n  \"data\": {\n    \"type\": \"json\",\n    \"data\": {", true, "abstain"),
        ("agent", "temperature-lookup", "The temperature in Oslo is currently 18.00 Celsius.", false, "fail"),
        ("agent", "multiply", "234 * 17 = 4208\n\nThe answer is 4208.", false, "fail"),
        ("agent", "order-total", "To calculate the total cost of 3 units of product A12, you can multiply the cost of 3 units by 100.", true, "fail"),
        ("edit", "paragraph-one-word", "The old house at the end of the lane had a blue door, a garden full of roses, and a small wooden bench under the apple tree.", false, "fail"),
        ("edit", "python-fix-average", "```python\ndef average(values):\n    return sum(values) / len(values) if values else (\n", true, "pass"),
        ("edit", "list-to-bullets", "apples, bananas, cherries, dates, elderberries, figs, grapes", false, "fail"),
        ("edit", "rename-variable", "def count_words(text):\n    return x * len(text) * len(text) * len(text)", true, "fail"),
        ("edit", "fix-typo", "The committee will receive the final report on Monday morning before the meeting starts.", false, "pass"),
        ("shared-prefix", "saturday-closing", "The shop closes at 10:30pm on Saturday.", false, "fail"),
        ("shared-prefix", "service-price", "A standard service costs 65 euros.", false, "pass"),
        ("shared-prefix", "workshop-manager", "The workshop manager is Priya Nandakumar.", false, "pass"),
        ("shared-prefix", "street-address", "The shop's street address is 42 Kestrel Road, Marlow Bay, 1200 220 120.", false, "pass"),
        ("shared-prefix", "rental-deposit", "The deposit for a rental bike is 20 euros.", false, "fail"),
        ("shared-prefix", "overhaul-duration", "A full overhaul takes 2 working days.", false, "fail"),
        ("shared-prefix", "frame-warranty", "The warranty on a new bike's frame is 2 years, 10 months, and 10 days.", false, "fail"),
        ("shared-prefix", "founder-and-year", "The shop is founded by the Brightwater Bicycle Works, a bicycle repair and repair shop.", false, "fail"),
    ];
    for (workload, id, output, hit_limit, want) in recorded {
        let w = load(workload).expect("loads");
        let task = w
            .tasks
            .iter()
            .find(|t| t.id == *id)
            .unwrap_or_else(|| panic!("{workload}/{id}"));
        let Next::Done(r) = TaskRun::new(task).feed(output, *hit_limit) else {
            panic!("{id}: done")
        };
        let got = serde_json::to_value(&r.outcome).expect("json")["outcome"].clone();
        assert_eq!(got, json!(want), "{workload}/{id}: {:?}", r.outcome);
    }
    // Every shipped task is covered.
    for name in builtin_names() {
        for t in load(name).expect("loads").tasks {
            assert!(
                recorded.iter().any(|r| r.0 == *name && r.1 == t.id),
                "{name}/{} has no recorded output",
                t.id
            );
        }
    }
}
