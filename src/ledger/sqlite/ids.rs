//! How the id newtypes are stored in SQLite: as their text, read back through the same
//! constructors the rest of the program uses.

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::ids::{ServerId, TaskId};

impl ToSql for TaskId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(ValueRef::Text(
            self.as_str().as_bytes(),
        )))
    }
}

impl FromSql for TaskId {
    fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
        v.as_str().map(TaskId::new)
    }
}

impl ToSql for ServerId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(ValueRef::Text(
            self.as_str().as_bytes(),
        )))
    }
}

impl FromSql for ServerId {
    fn column_result(v: ValueRef<'_>) -> FromSqlResult<Self> {
        v.as_str().map(ServerId::stored)
    }
}

#[cfg(test)]
mod tests {
    use crate::ids::TaskId;

    #[test]
    fn ids_round_trip_through_sqlite() {
        let id = TaskId::new("0123456789abcdef");
        let db = rusqlite::Connection::open_in_memory().unwrap();
        let got: TaskId = db.query_row("SELECT ?1", [&id], |r| r.get(0)).unwrap();
        assert_eq!(got.as_str(), id.as_str());
    }
}
