/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of the kernel's headers to build drivers/mmc/host/mmc_emu_ftl.c
 * as it is in the kernel tree into the userspace replay (ftlreplay), so that
 * the card and the replay share one FTL implementation.
 */
#ifndef KSHIM_H
#define KSHIM_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint32_t u32;
typedef unsigned long long u64;
typedef int32_t s32;

#define U32_MAX		UINT32_MAX
#define S32_MAX		INT32_MAX
#define GFP_KERNEL	0
#define IS_ALIGNED(x, a)	(((x) & ((__typeof__(x))(a) - 1)) == 0)

#define pr_err(fmt, ...)	fprintf(stderr, pr_fmt(fmt), ##__VA_ARGS__)
#ifndef pr_fmt
#define pr_fmt(fmt)	fmt
#endif

/* The model's WARN_ON_ONCE()s are invariants: the replay stops on one */
#define WARN_ON_ONCE(cond) ({						\
	bool __c = !!(cond);						\
	if (__c) {							\
		fprintf(stderr, "ftlreplay: %s:%d: WARN_ON_ONCE(%s)\n",	\
			__FILE__, __LINE__, #cond);			\
		abort();						\
	}								\
	__c;								\
})

#define MAX_ERRNO	4095
#define IS_ERR_VALUE(x)	((unsigned long)(void *)(x) >= (unsigned long)-MAX_ERRNO)

static inline void *ERR_PTR(long error)
{
	return (void *)error;
}

static inline long PTR_ERR(const void *ptr)
{
	return (long)ptr;
}

static inline bool IS_ERR(const void *ptr)
{
	return IS_ERR_VALUE((unsigned long)ptr);
}

static inline u64 div_u64_rem(u64 dividend, u32 divisor, u32 *remainder)
{
	*remainder = dividend % divisor;
	return dividend / divisor;
}

static inline u64 div_u64(u64 dividend, u32 divisor)
{
	return dividend / divisor;
}

static inline u64 div64_u64(u64 dividend, u64 divisor)
{
	return dividend / divisor;
}

static inline void *kzalloc(size_t size, int flags)
{
	(void)flags;
	return calloc(1, size);
}

static inline void *kvcalloc(size_t n, size_t size, int flags)
{
	(void)flags;
	return calloc(n, size);
}

static inline void kfree(const void *p)
{
	free((void *)p);
}

static inline void kvfree(const void *p)
{
	free((void *)p);
}

#endif /* KSHIM_H */
