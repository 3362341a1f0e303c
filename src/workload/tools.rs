//! Simulated tools for agent tasks: their declaration, how they are shown to the model (the
//! `<tools>…</tools>` system prompt and `<tool_call>[…]</tool_call>` answer format SmolLM2-Instruct
//! was tuned on), parsing the calls out of the model's output, and computing results in-process
//! from a lookup table or an arithmetic evaluator. Nothing here touches a shell, file or network.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The function name the model must use.
    pub name: String,
    /// What the tool does, shown to the model.
    pub description: String,
    /// JSON-schema parameters, shown to the model as-is.
    pub parameters: Value,
    /// How the result is simulated.
    pub result: Simulation,
}

/// How a tool's result is computed from its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Simulation {
    /// `table[argument]` (keys compared trimmed and case-insensitively), else `missing`.
    Lookup {
        argument: String,
        table: BTreeMap<String, String>,
        #[serde(default = "default_missing")]
        missing: String,
    },
    /// Evaluates `argument` as an arithmetic expression: numbers, + - * / and parentheses.
    Arithmetic { argument: String },
}

fn default_missing() -> String {
    "error: no entry for that value".into()
}

/// One call the model made, with the simulated result it got back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool name as the model wrote it.
    pub name: String,
    /// The arguments object as the model wrote it.
    pub arguments: Value,
    /// The simulated result returned to the model.
    pub result: String,
}

/// The system prompt that lists the tools and the call format.
pub(crate) fn system_prompt(tools: &[ToolSpec], extra: Option<&str>) -> String {
    let list: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
        .collect();
    let list = serde_json::to_string(&list).expect("a JSON value always serializes; this is a bug");
    let mut s = String::from(
        "You are an expert in composing functions. You are given a question and a set of possible functions.\n\
         Based on the question, you will need to make one or more function/tool calls to achieve the purpose.\n\
         If none of the functions can be used, point it out and refuse to answer.\n\
         If the given question lacks the parameters required by the function, also point it out.\n\n\
         You have access to the following tools:\n<tools>",
    );
    s.push_str(&list);
    s.push_str(
        "</tools>\n\nThe output MUST strictly adhere to the following format, and NO other text MUST be included.\n\
         The example format is as follows. Please make sure the parameter type is correct. If no function call is needed, please make the tool calls an empty list '[]'.\n\
         <tool_call>[\n{\"name\": \"func_name1\", \"arguments\": {\"argument1\": \"value1\", \"argument2\": \"value2\"}},\n(more tool calls as required)\n]</tool_call>",
    );
    if let Some(extra) = extra.filter(|e| !e.trim().is_empty()) {
        s.push_str("\n\n");
        s.push_str(extra.trim());
    }
    s
}

/// A call as parsed from the output, before it is run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParsedCall {
    /// The tool name as written.
    pub name: String,
    /// The arguments object (a JSON string holding an object is unwrapped).
    pub arguments: Value,
}

/// Finds `<tool_call>…</tool_call>` blocks in `output`. `Ok(None)` when there is no block (a
/// final answer); `Ok(Some(vec![]))` for an empty list; `Err` when a block is malformed.
pub(crate) fn parse_calls(output: &str) -> Result<Option<Vec<ParsedCall>>, String> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut rest = output;
    let mut calls = Vec::new();
    let mut found = false;
    while let Some(start) = rest.find(OPEN) {
        found = true;
        let body = &rest[start + OPEN.len()..];
        let end = body
            .find(CLOSE)
            .ok_or("a <tool_call> block is not closed with </tool_call>")?;
        calls.extend(parse_block(body[..end].trim())?);
        rest = &body[end + CLOSE.len()..];
    }
    Ok(found.then_some(calls))
}

fn parse_block(body: &str) -> Result<Vec<ParsedCall>, String> {
    let value: Value = serde_json::from_str(body)
        .or_else(|_| serde_json::from_str(&body.replace('\'', "\"")))
        .map_err(|e| format!("the tool call is not valid JSON ({e}): {body:?}"))?;
    let items = match value {
        Value::Array(items) => items,
        obj @ Value::Object(_) => vec![obj],
        other => {
            return Err(format!(
                "a tool call must be a JSON object or list, got {other}"
            ))
        }
    };
    items.into_iter().map(parse_one).collect()
}

fn parse_one(item: Value) -> Result<ParsedCall, String> {
    let name = item
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("a tool call has no \"name\" string: {item}"))?
        .to_string();
    let arguments = match item.get("arguments") {
        None => json!({}),
        Some(Value::String(s)) => serde_json::from_str(s)
            .map_err(|e| format!("the arguments of {name} are not a JSON object ({e})"))?,
        Some(v) => v.clone(),
    };
    if !arguments.is_object() {
        return Err(format!(
            "the arguments of {name} are not a JSON object: {arguments}"
        ));
    }
    Ok(ParsedCall { name, arguments })
}

/// A JSON argument as plain text: strings as they are, other values as JSON.
pub(crate) fn arg_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.trim().to_string(),
        other => other.to_string(),
    }
}

/// Runs a parsed call against the declared tools; unknown tools and missing arguments produce
/// an error result for the model to read, as a real tool would.
pub(crate) fn execute(tools: &[ToolSpec], call: &ParsedCall) -> String {
    let Some(tool) = tools.iter().find(|t| t.name == call.name) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return format!("error: unknown tool {:?}; available: {names:?}", call.name);
    };
    let (Simulation::Lookup { argument, .. } | Simulation::Arithmetic { argument }) = &tool.result;
    let Some(arg) = call.arguments.get(argument) else {
        return format!("error: missing argument {argument:?}");
    };
    match &tool.result {
        Simulation::Lookup { table, missing, .. } => {
            let key = arg_text(arg).to_lowercase();
            table
                .iter()
                .find(|(k, _)| k.trim().to_lowercase() == key)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| missing.clone())
        }
        Simulation::Arithmetic { .. } => match eval_arithmetic(&arg_text(arg)) {
            Ok(x) => format_number(x),
            Err(e) => format!("error: {e}"),
        },
    }
}

/// A number as a person writes it: integers without a decimal point, others to 6 places.
pub(crate) fn format_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        let s = format!("{x:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Evaluates `+ - * /`, unary minus and parentheses over decimal numbers.
pub(crate) fn eval_arithmetic(expr: &str) -> Result<f64, String> {
    let tokens: Vec<char> = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = Parser { t: &tokens, i: 0 };
    let v = p.sum()?;
    if p.i != tokens.len() {
        return Err(format!("unexpected {:?} in {expr:?}", tokens[p.i]));
    }
    if !v.is_finite() {
        return Err(format!("{expr:?} has no finite value"));
    }
    Ok(v)
}

struct Parser<'a> {
    t: &'a [char],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.t.get(self.i).copied()
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.unary()?;
        while let Some(op @ ('*' | '/' | 'x' | '×')) = self.peek() {
            self.i += 1;
            let r = self.unary()?;
            v = if op == '/' { v / r } else { v * r };
        }
        Ok(v)
    }

    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some('-') => {
                self.i += 1;
                Ok(-self.unary()?)
            }
            Some('+') => {
                self.i += 1;
                self.unary()
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some('(') => {
                self.i += 1;
                let v = self.sum()?;
                if self.peek() != Some(')') {
                    return Err("missing ')'".into());
                }
                self.i += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => {
                let start = self.i;
                while matches!(self.peek(), Some(c) if c.is_ascii_digit() || c == '.' || c == ',') {
                    self.i += 1;
                }
                let s: String = self.t[start..self.i]
                    .iter()
                    .filter(|c| **c != ',')
                    .collect();
                s.parse().map_err(|_| format!("{s:?} is not a number"))
            }
            Some(c) => Err(format!("unexpected {c:?}")),
            None => Err("the expression ends too early".into()),
        }
    }
}
