/* The Varlink methods for budgets: io.lockd.Console's ListBudgets and ResetBudget. Every handler
 * takes the Manager as userdata. */
#pragma once

#include "varlink.h"

/* The console's budget methods, terminated by an entry with name NULL. */
extern const VarlinkMethod console_budget_methods[];
