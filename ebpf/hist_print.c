// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "hist_print.h"

#define STARS_MAX 40

static unsigned long long slot_low(int slot)
{
	return slot ? 1ULL << slot : 0;
}

static unsigned long long slot_high(int slot)
{
	return (1ULL << (slot + 1)) - 1;
}

void hist_diff(struct tempo_hist *out, const struct tempo_hist *cur, const struct tempo_hist *prev)
{
	for (int i = 0; i < TEMPO_HIST_SLOTS; i++)
		out->slots[i] = cur->slots[i] - prev->slots[i];
	out->count = cur->count - prev->count;
	out->sum_ns = cur->sum_ns - prev->sum_ns;
	out->bytes = cur->bytes - prev->bytes;
}

static void print_stars(FILE *f, unsigned long long v, unsigned long long max)
{
	int n = max ? (int)(v * STARS_MAX / max) : 0;

	for (int i = 0; i < STARS_MAX; i++)
		fputc(i < n ? '*' : ' ', f);
}

void hist_print(FILE *f, const struct tempo_hist *h, const char *unit)
{
	unsigned long long max = 0;
	int last = -1;

	for (int i = 0; i < TEMPO_HIST_SLOTS; i++) {
		if (h->slots[i])
			last = i;
		if (h->slots[i] > max)
			max = h->slots[i];
	}
	if (last < 0) {
		fprintf(f, "     (no events)\n");
		return;
	}
	fprintf(f, "%16s%12s : count    distribution\n", unit, "");
	for (int i = 0; i <= last; i++) {
		fprintf(f, "%12llu -> %-12llu : %-8llu |", slot_low(i), slot_high(i),
			(unsigned long long)h->slots[i]);
		print_stars(f, h->slots[i], max);
		fprintf(f, "|\n");
	}
	fprintf(f, "     count %llu, bytes %llu, mean %llu ns\n", (unsigned long long)h->count,
		(unsigned long long)h->bytes,
		h->count ? (unsigned long long)(h->sum_ns / h->count) : 0ULL);
}

void hist_print_json(FILE *f, const struct tempo_hist *h, const char *unit)
{
	const char *sep = "";

	fprintf(f, "{\"count\":%llu,\"sum_ns\":%llu,\"bytes\":%llu,\"unit\":\"%s\",\"slots\":[",
		(unsigned long long)h->count, (unsigned long long)h->sum_ns,
		(unsigned long long)h->bytes, unit);
	for (int i = 0; i < TEMPO_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		fprintf(f, "%s{\"low\":%llu,\"high\":%llu,\"count\":%llu}", sep, slot_low(i),
			slot_high(i), (unsigned long long)h->slots[i]);
		sep = ",";
	}
	fprintf(f, "]}");
}
