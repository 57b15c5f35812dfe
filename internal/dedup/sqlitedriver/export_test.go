package sqlitedriver

// TemplateData are the names d renders its migrations with: the tests render the migrations
// of an older fieldwork with them.
func TemplateData(d *Driver) map[string]string { return d.templateData() }
