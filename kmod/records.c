// SPDX-License-Identifier: GPL-2.0
/*
 * The record stream read() returns: each fd's STAGE records (queued by
 * stage.c when its batch ends) and the eviction notices of the device's
 * notice log, merged in the order they happened.
 *
 * A notice is logged once, whatever the number of subscribers: the evicting
 * call (holding dev->lock) writes one log entry and at most queues one
 * wake-up. Each subscribed fd reads the log from its own position, so a
 * subscriber costs nothing until it reads. One more than TEMPO_NOTICES_PER_FD
 * notices behind reads the first 511 of them, then one LOST record with the
 * bytes of every later notice up to the moment it reads it, as if it had a
 * queue of 512; one the log (TEMPO_NOTICE_LOG entries) has overwritten reads
 * a LOST record at once.
 */
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "tempo.h"

static void tempo_notice_wake(struct work_struct *work)
{
	struct tempo_dev *dev = container_of(work, struct tempo_dev, notice_wake);

	wake_up_interruptible_poll(&dev->notice_wait, EPOLLIN | EPOLLRDNORM);
}

/* May sleep. */
int tempo_records_init(struct tempo_dev *dev)
{
	spin_lock_init(&dev->notice_lock);
	init_waitqueue_head(&dev->notice_wait);
	INIT_WORK(&dev->notice_wake, tempo_notice_wake);
	dev->notice_log = kvcalloc(TEMPO_NOTICE_LOG, sizeof(*dev->notice_log), GFP_KERNEL);
	return dev->notice_log ? 0 : -ENOMEM;
}

/* After the last fd is gone. May sleep. */
void tempo_records_exit(struct tempo_dev *dev)
{
	cancel_work_sync(&dev->notice_wake);
	kvfree(dev->notice_log);
}

/*
 * Logs one notice for every subscriber: constant work, whatever their number.
 * Waking blocked readers and pollers (as many as there are) is left to a work
 * item, queued only when one waits. Caller holds dev->lock; does not sleep.
 */
void tempo_notify_locked(struct tempo_dev *dev, u16 kind, u64 offset, u64 bytes)
{
	lockdep_assert_held(&dev->lock);
	spin_lock(&dev->notice_lock);
	dev->notice_log[dev->notice_head % TEMPO_NOTICE_LOG] = (struct tempo_notice){
		.offset = offset, .bytes = bytes, .ns = ktime_get_ns(), .kind = kind
	};
	dev->notice_bytes += bytes;
	WRITE_ONCE(dev->notice_head, dev->notice_head + 1);
	spin_unlock(&dev->notice_lock);
	/* a full barrier, paired with the waiter's between queuing itself and looking */
	if (wq_has_sleeper(&dev->notice_wait))
		queue_work(system_wq, &dev->notice_wake);
}

/* Queues a finished batch's record on its fd; ev then belongs to the queue. */
void tempo_records_queue_stage_locked(struct tempo_file *tf, struct tempo_event *ev)
{
	lockdep_assert_held(&tf->dev->lock);
	/* notices are logged under dev->lock too: those before this record come first */
	ev->notice_mark = tf->dev->notice_head;
	spin_lock(&tf->cq_lock);
	list_add_tail(&ev->node, &tf->cq);
	spin_unlock(&tf->cq_lock);
	wake_up_interruptible(&tf->cq_wait);
}

/* close(): frees the unread STAGE records; its batches queue no more (tf->closed). */
void tempo_records_release(struct tempo_file *tf)
{
	struct tempo_event *ev, *next;
	LIST_HEAD(unread);

	spin_lock(&tf->cq_lock);
	list_splice_init(&tf->cq, &unread);
	spin_unlock(&tf->cq_lock);
	list_for_each_entry_safe(ev, next, &unread, node)
		kfree(ev);
}

long tempo_ioctl_set_events(struct tempo_file *tf, void __user *argp)
{
	struct tempo_dev *dev = tf->dev;
	struct tempo_events e;

	if (copy_from_user(&e, argp, sizeof(e)))
		return -EFAULT;
	if (e.mask & ~TEMPO_EVENT_ALL || e.reserved0 || e.reserved[0] || e.reserved[1] ||
	    e.reserved[2])
		return -EINVAL;
	spin_lock(&tf->cq_lock);
	if (e.mask && !tf->events) {
		/* from the next notice on */
		spin_lock(&dev->notice_lock);
		WRITE_ONCE(tf->notice_pos, dev->notice_head);
		tf->notice_pos_bytes = dev->notice_bytes;
		tf->lost = false;
		spin_unlock(&dev->notice_lock);
	}
	WRITE_ONCE(tf->events, e.mask);
	spin_unlock(&tf->cq_lock);
	return 0;
}

/* The next record tempo_peek_record() found, and how reading it moves the fd's view. */
struct tempo_next {
	bool notice; /* else the first STAGE record */
	u64 pos; /* the notice's place in the log */
	u64 next_pos;
	u64 next_pos_bytes;
};

/* The record at the fd's place in the notice log, if any. Caller holds tf->cq_lock. */
static bool tempo_peek_notice(struct tempo_file *tf, struct tempo_completion *rec,
			      struct tempo_next *next)
{
	struct tempo_dev *dev = tf->dev;
	const u64 pos = tf->notice_pos;
	const struct tempo_notice *n;
	u64 head, oldest;
	bool lost;

	if (!tf->events)
		return false;
	spin_lock(&dev->notice_lock);
	head = dev->notice_head;
	if (pos == head) {
		spin_unlock(&dev->notice_lock);
		return false;
	}
	oldest = head > TEMPO_NOTICE_LOG ? head - TEMPO_NOTICE_LOG : 0;
	if (pos < oldest) {
		tf->lost = true;
		tf->lost_at = pos;
	} else if (!tf->lost && head - pos > TEMPO_NOTICES_PER_FD) {
		tf->lost = true;
		tf->lost_at = pos + TEMPO_NOTICES_PER_FD - 1;
	}
	lost = tf->lost && pos == tf->lost_at;
	/* a LOST record carries the time of the newest notice it counts */
	n = &dev->notice_log[(lost ? head - 1 : pos) % TEMPO_NOTICE_LOG];
	*rec = (struct tempo_completion){ .len = sizeof(*rec), .complete_ns = n->ns };
	next->notice = true;
	next->pos = pos;
	if (lost) {
		rec->kind = TEMPO_REC_LOST;
		rec->bytes = dev->notice_bytes - tf->notice_pos_bytes;
		next->next_pos = head;
		next->next_pos_bytes = dev->notice_bytes;
	} else {
		rec->kind = n->kind;
		rec->offset = n->offset;
		rec->bytes = n->bytes;
		next->next_pos = pos + 1;
		next->next_pos_bytes = tf->notice_pos_bytes + n->bytes;
	}
	spin_unlock(&dev->notice_lock);
	return true;
}

/*
 * The oldest record (a STAGE record or a notice), copied into rec; false when
 * none. Does not dequeue. Caller holds tf->read_lock.
 */
static bool tempo_peek_record(struct tempo_file *tf, struct tempo_completion *rec,
			      struct tempo_next *next)
{
	struct tempo_completion notice;
	struct tempo_event *ev;
	bool found;

	spin_lock(&tf->cq_lock);
	ev = list_first_entry_or_null(&tf->cq, struct tempo_event, node);
	found = tempo_peek_notice(tf, &notice, next);
	if (found && (!ev || next->pos < ev->notice_mark)) {
		*rec = notice;
	} else if (ev) {
		next->notice = false;
		*rec = ev->rec;
		found = true;
	}
	spin_unlock(&tf->cq_lock);
	return found;
}

/* Removes the record tempo_peek_record() returned. Caller holds tf->read_lock. */
static void tempo_pop_record(struct tempo_file *tf, const struct tempo_next *next)
{
	struct tempo_event *ev = NULL;

	spin_lock(&tf->cq_lock);
	if (!next->notice) {
		ev = list_first_entry(&tf->cq, struct tempo_event, node);
		list_del(&ev->node);
	} else if (tf->notice_pos == next->pos) { /* else SET_EVENTS moved it meanwhile */
		WRITE_ONCE(tf->notice_pos, next->next_pos);
		tf->notice_pos_bytes = next->next_pos_bytes;
		if (tf->lost && tf->lost_at < next->next_pos)
			tf->lost = false;
	}
	spin_unlock(&tf->cq_lock);
	if (!ev)
		return;
	kfree(ev);
	mutex_lock(&tf->dev->lock);
	tf->nr_batches--;
	mutex_unlock(&tf->dev->lock);
}

/* A record to read, or the tier is lost (read() then fails). */
static bool tempo_records_queued(struct tempo_file *tf)
{
	return !list_empty_careful(&tf->cq) ||
	       (READ_ONCE(tf->events) &&
		READ_ONCE(tf->notice_pos) != READ_ONCE(tf->dev->notice_head)) ||
	       READ_ONCE(tf->dev->tier_lost);
}

/*
 * Sleeps until a record is queued: on the fd's own queue (its STAGE records)
 * and the device's (notices). 0, or -ERESTARTSYS on a signal.
 */
static int tempo_wait_records(struct tempo_file *tf)
{
	DEFINE_WAIT(own);
	DEFINE_WAIT(notices);
	int ret = 0;

	for (;;) {
		prepare_to_wait(&tf->cq_wait, &own, TASK_INTERRUPTIBLE);
		prepare_to_wait(&tf->dev->notice_wait, &notices, TASK_INTERRUPTIBLE);
		if (tempo_records_queued(tf))
			break;
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		schedule();
	}
	finish_wait(&tf->dev->notice_wait, &notices);
	finish_wait(&tf->cq_wait, &own);
	return ret;
}

/*
 * Returns whole records, oldest first; blocks unless O_NONBLOCK. A record
 * leaves the queue only once it reached the caller's buffer.
 */
ssize_t tempo_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	const size_t sz = sizeof(struct tempo_completion);
	struct tempo_file *tf = file->private_data;
	struct tempo_completion rec;
	struct tempo_next next;
	size_t copied = 0;
	int ret;

	if (count < sz)
		return -EINVAL;
	if (mutex_lock_interruptible(&tf->read_lock))
		return -ERESTARTSYS;
	while (copied + sz <= count) {
		if (READ_ONCE(tf->dev->tier_lost)) {
			if (copied)
				break;
			ret = -EIO;
			goto out_unlock;
		}
		if (!tempo_peek_record(tf, &rec, &next)) {
			if (copied)
				break;
			ret = -EAGAIN;
			if (file->f_flags & O_NONBLOCK)
				goto out_unlock;
			ret = tempo_wait_records(tf);
			if (ret)
				goto out_unlock;
			continue;
		}
		if (copy_to_user(buf + copied, &rec, sz)) {
			ret = -EFAULT;
			if (!copied)
				goto out_unlock;
			break;
		}
		tempo_pop_record(tf, &next);
		copied += sz;
	}
	ret = copied;
out_unlock:
	mutex_unlock(&tf->read_lock);
	return ret;
}

__poll_t tempo_poll(struct file *file, poll_table *wait)
{
	struct tempo_file *tf = file->private_data;

	poll_wait(file, &tf->cq_wait, wait);
	poll_wait(file, &tf->dev->notice_wait, wait);
	/* pairs with wq_has_sleeper() in tempo_notify_locked() */
	smp_mb();
	if (READ_ONCE(tf->dev->tier_lost))
		return EPOLLIN | EPOLLRDNORM | EPOLLERR;
	return tempo_records_queued(tf) ? EPOLLIN | EPOLLRDNORM : 0;
}
