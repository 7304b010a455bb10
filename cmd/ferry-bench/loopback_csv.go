package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// writeLoopCSV writes every run of every cell, one row each, for readers
// who want more than the medians: the rounds in the order they ran.
func writeLoopCSV(w io.Writer, tables []loopTable) error {
	c := csv.NewWriter(w)
	c.Write([]string{"workload", "what", "round", "seconds", "mb_per_s", "cpu_s_send", "cpu_s_recv", "cpu_s_other",
		"peak_rss_send_mib", "peak_rss_recv_mib", "carried_by"})
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	for _, t := range tables {
		for _, cell := range t.cells {
			for i, r := range t.results[cell.key] {
				c.Write([]string{t.w.name, cell.key, strconv.Itoa(i + 1), f(r.seconds, 3), f(r.mbps, 1),
					f(r.cpuSend, 2), f(r.cpuRecv, 2), f(r.cpuOther, 2),
					f(float64(r.rssSendKB)/1024, 1), f(float64(r.rssRecvKB)/1024, 1), r.transport})
			}
		}
	}
	c.Flush()
	if err := c.Error(); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	return nil
}
