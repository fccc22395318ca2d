package gate

// MinPairedRequests is the fewest requests that succeed on both sides
// a scenario's run needs for the paired verdict to judge it. The
// shipped examples send at least this many.
const MinPairedRequests = minBootstrapRequests
