package storemetrics

// OpNames and ErrorKinds are the label values of errors_total, for the
// tests that check every series exists from the start.
var (
	OpNames    = opNames[:]
	ErrorKinds = errorKinds
)
