package dlq

// A listing reads three times a dead letter and writes four: time.Date and time.Time's Date
// and Clock each work out the calendar anew, with 64-bit divisions. These do it once, in
// 32-bit arithmetic (C. Neri and L. Schneider, "Euclidean affine functions and their
// application to calendar algorithms", 2022), on days since 1970-01-01 of the proleptic
// Gregorian calendar, as package time counts them, for the years 0 to 9999 and beyond.

// civilShift moves the days counted so that every one of those years is counted from a
// positive day: 82 eras of 400 years before 1 March of year 0.
const (
	civilShift = 82
	civilDays  = 719468 + 146097*civilShift // 1970-01-01, counted so
	civilYears = 400 * civilShift
)

// unixDays is the day of y-mo-d, days since 1970-01-01.
func unixDays(y, mo, d int) int64 {
	yy, m := uint32(y+civilYears), uint32(mo)
	if m <= 2 {
		yy--
		m += 12
	}
	c := yy / 100
	n := 1461*yy/4 - c + c/4 + (979*m-2919)/32 + uint32(d) - 1
	return int64(n) - civilDays
}

// civil is the date of day days (since 1970-01-01).
func civil(days int64) (y, mo, d int) {
	n := uint32(days+civilDays)*4 + 3
	c := n / 146097
	n2 := n%146097 | 3
	p := uint64(2939745) * uint64(n2)
	yy := 100*c + uint32(p>>32)
	ny := uint32(p) / 2939745 / 4
	n3 := 2141*ny + 197913
	m, dd := n3>>16, (n3&0xFFFF)/2141
	if ny >= 306 {
		yy++
		m -= 12
	}
	return int(yy) - civilYears, int(m), int(dd) + 1
}

// Seconds since 1970-01-01 UTC of the first instant of year 0 and of year 10000.
var (
	year0Unix     = unixDays(0, 1, 1) * 86400
	year10000Unix = unixDays(10000, 1, 1) * 86400
)
