/*
 * prefault.h - a zygote's spares copy, while they wait, the pages its
 * calls write, so the calls do not stop for those copies.  Every failure
 * here is silent on purpose: without the book a call faults its pages in
 * as it goes, as it would anyway.
 */
#ifndef DOLSOT_PREFAULT_H
#define DOLSOT_PREFAULT_H

/* In a zygote, before its first spare: a fresh book (one inherited from
 * the zygote this one grew from is dropped: its addresses are not ours). */
void prefault_open(void);

/* In a process that must not read or write the book (a sandboxed cell). */
void prefault_forget(void);

/* In a spare, before it waits for its call: copy the book's pages, or be
 * the one spare in so many that learns them. */
void prefault_apply(void);

/* In a warm worker after its answer: if its spare was a learner, write
 * the pages it owns now into the book. */
void prefault_learn(void);

#endif
