//! Placeholder replaced by the HTML report.
pub struct SheetTable {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}
pub fn page(_run: &crate::record::RunRecord, _s: &SheetTable, _v: &[String]) -> String {
    String::new()
}
