/*
 * similarity.h - code similarity checks per lab with Debian's
 * similarity-tester (sim_c for CUDA C, sim_text for Python), never a
 * comparer of our own (docs/staff.md, docs/api-course.md).
 *
 * A run takes each student's best submission of the lab (the scoreboard's
 * row), writes them to a private temporary folder and runs sim in a child
 * process (uv_spawn, off the event loop), three steps:
 *   1. mask: sim -n -S students / starter finds what each file shares with
 *      the lab's starter; those lines are blanked in a copy (the starter
 *      code is excluded: every student shares it, it proves nothing);
 *   2. percent: sim -p -e -s over the masked copies ("A consists for x % of
 *      B material");
 *   3. regions: sim -n -e -s over the same copies (line ranges per pair).
 * Each step is bounded in time (SIMILARITY_STEP_S, then SIGKILL) and output
 * (SIMILARITY_OUTPUT_MAX, then SIGKILL); a run that hits a bound fails with
 * a sentence saying which. One run at a time in the server.
 *
 * A check also runs by itself once per lab after the lab's last deadline
 * (similarity_schedule).
 *
 * Owns the tables similarity_runs and similarity_pairs.
 */
#ifndef CUGRADE_SIMILARITY_H
#define CUGRADE_SIMILARITY_H

#include <jansson.h>


struct app;
struct api_error;
struct auth_user;
struct http_request;

#define SIMILARITY_STEP_S 120
#define SIMILARITY_OUTPUT_MAX (8u << 20)
#define SIMILARITY_PAIRS_MAX 500
#define SIMILARITY_AUTO_S 600 /* how often the scheduler looks for labs past their deadlines */

extern const char similarity_schema[];

/* On the loop, once a start is over, if its client is still there: the
 * run run_id of lab started (e NULL), or why not (e). Answer req and
 * return HTTP_DONE (or HTTP_DEFERRED when req is finished later). */
typedef int similarity_answer_fn(struct app *app, struct http_request *req, const char *lab,
                                 long long run_id, const struct api_error *e);

/* Staff: start a run over lab, off the loop: the role, the lab and that no
 * check runs are checked here (409 while one runs or starts); the best
 * submissions' sources read and the files for sim written on the reader
 * (409 with fewer than two students), the run's row and its audit row on
 * the writer, then sim spawned and answer called. Returns 0 (answer comes
 * later), or -errno with e (nothing started: answer req now). */
int similarity_start(struct app *app, struct http_request *req, const struct auth_user *viewer,
                     const char *lab, similarity_answer_fn *answer, struct api_error *e);

/* Staff: {"lab","run":{...}|null,"pairs":[{"id","percent","a":{"user","submission","percent"},
 * "b":{...}}]} of the lab's latest run, most similar first. */
int similarity_report(struct app *app, const struct auth_user *viewer, const char *lab,
                      json_t **out, struct api_error *e);

/* Staff: one pair with its matching regions
 * {"id","lab","run","percent","a":{...},"b":{...},"regions":[{"a":[l1,l2],"b":[l1,l2],"tokens"}]}.
 */
int similarity_pair(struct app *app, const struct auth_user *viewer, long long pair_id,
                    json_t **out, struct api_error *e);

/* Start the scheduler: every SIMILARITY_AUTO_S seconds (the environment's
 * CUGRADE_SIMILARITY_AUTO_S instead; 0 turns it off), a lab whose due date
 * and hard deadline are past and that has no check started since gets one
 * (by the system: no user, audit actor 0). The loop picks the labs past
 * their deadlines from its rubrics; whether a check started since is read
 * on the reader, in the start's own job (similarity_start's path). */
void similarity_schedule(struct app *app);

/* Stop a running check (server shutdown): kill the child; its handles close
 * through the loop. */
void similarity_shutdown(struct app *app);


#endif
