// Package envelope turns a Kafka record into an Event: the event id, the aggregate it belongs
// to and that aggregate's version, its type, time and data.
//
// Three envelopes are recognised (docs/design.md §3.1): CloudEvents 1.0 binary mode, CloudEvents 1.0
// structured mode in its JSON format, and a plain JSON object. Decoding is pure: it does no I/O,
// keeps no state, never panics on any input, and never aliases the slices it is given, so it is
// safe for concurrent use and an Event outlives the record it came from.
//
// # Guarantees
//
// Every Event returned without an error satisfies:
//   - ID is non-empty and not only white space;
//   - every string field is valid UTF-8 and free of NUL bytes (so it can be stored in a
//     Postgres text column as it is);
//   - Data is empty or one valid JSON value, other than null, encoded in UTF-8;
//   - HasVersion is false exactly when the envelope carries no aggregate version, and then
//     Version is 0;
//   - Time is the zero time.Time when the envelope carries no time (a time of
//     0001-01-01T00:00:00Z, what a Go producer writes for an unset time, is the same value);
//     otherwise it keeps the offset it was written with and renders as RFC 3339.
//
// Every error returned is a *MalformedError that names the format, the field and the reason,
// and matches ErrMalformed under errors.Is. The same input always gives the same result.
//
// # Decisions
//
// Where docs/design.md is silent, the package decides as follows.
//   - Recognition order: a content-type header naming a CloudEvents media type means
//     structured mode even when ce_* headers are present, as the CloudEvents Kafka binding
//     specifies; otherwise any ce_* header means binary mode, so a binary record without ce_id
//     is malformed rather than read some other way; otherwise the value must be a JSON object,
//     read as structured mode when it has "specversion" and as plain JSON when it has
//     "event_id". A structured value without "id" is malformed even when it has "event_id".
//   - Header keys are matched ignoring ASCII case; where a key repeats the last one wins.
//     JSON members are matched exactly; where a member repeats the last one wins.
//   - Ids are strict: a string, not empty, not only white space. A number is not an id,
//     because "123" and 123 must not silently become the same dedup key.
//   - Optional attributes that are absent, JSON null, or the empty string are absent. A
//     type mismatch in an optional attribute (a number for a string, say) is malformed.
//   - Aggregate versions are JSON integers or strings holding a decimal integer (white space
//     around it allowed); 1.5, 2.0, 1e3, "v2" and true are malformed, negative values are kept.
//     In plain JSON, version is read only when there is no aggregate_version member: next to
//     one, version is likely a schema version and is ignored.
//   - Times are RFC 3339 with optional fractional seconds; lower-case "t" and "z" are accepted
//     as RFC 3339 allows, a comma before the fraction and offsets of 24h or more are not.
//   - Only the JSON event format is decoded in structured mode; other CloudEvents formats and
//     batch mode are malformed with a Reason naming the content-type. specversion is not
//     checked. data and data_base64 together are malformed; data_base64 must be base64.
//   - In binary mode the value is the data and never a reason to reject the record.
//   - A value that is not UTF-8 is not JSON (RFC 8259); Reasons give 1-based byte positions.
package envelope
