/* attest reports: helpers shared by the report printers (not a public header). */
#ifndef ATTEST_REPORT_INTERNAL_H
#define ATTEST_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include "attest/record.h"
#include "attest/report.h"

/* Formats a metric for a table: "1.234e-03", "0", "inf", "nan". */
void attest_rep_num(double v, char *buf, size_t cap);

/* Index of the output a record is best described by: the first with a failed gate, else 0. */
int attest_rep_main_output(const attest_case_record *rec);

/* 1 when an output fails on inf/nan positions while every gate of its finite pairs passes:
 * its first inf/nan mismatch, not its worst finite element, is where the failure is. */
int attest_rep_nonfinite_first(const attest_tensor_metrics *m);

/* Prints "#17 MISMATCH [element+cosine] cand-name" (no newline). */
void attest_rep_headline(FILE *f, const attest_case_record *rec);


#endif /* ATTEST_REPORT_INTERNAL_H */
