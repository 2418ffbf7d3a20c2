-- qidrisk 0.1.0 -> 0.2.0.  A new installation of 0.2.0 runs qidrisk--0.1.0.sql
-- and then this script, so it holds every change of 0.2.0, once.

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION qidrisk UPDATE TO '0.2.0'" to load this file. \quit
