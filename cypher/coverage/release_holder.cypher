// mode: write
// Every pair lease a holder still has (a job's id, or one ingest run's): released when its run ends, including those
// an earlier attempt of the same job took before its worker died. Params: $holder
MATCH (l:PairLease {holder: $holder})
DELETE l
RETURN count(*) AS released
