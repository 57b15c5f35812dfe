package sqlitedriver

// TemplateData are the names d renders its migrations with: the tests render the migrations
// of an older fieldwork with them.
func TemplateData(d *Driver) map[string]string { return d.templateData() }

// IDStatements are d's statements that take event ids, by name: the plan test explains them as
// the driver sends them.
func IDStatements(d *Driver) map[string]string {
	return map[string]string{
		"lookup": d.sql.lookup, "marked": d.sql.marked, "outcomes": d.sql.outcomes, "setOutcome": d.sql.setOutcome,
		"forgetOne": d.sql.forgetOne, "forgetAll": d.sql.forgetAll, "getAll": d.sql.getAll,
	}
}
